"""config_hash: invariant to representation, sensitive to every semantic edit (property tests)."""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crsbench.config import config_hash, load_config, parse_config

RAW: dict[str, Any] = {
    "version": 1,
    "encoders": ["pixel", {"name": "random_cnn", "input_size": 96}],
    "datasets": {
        "isic2019": {"root": "data/isic2019"},
        "chexpert": {"root": "data/chexpert", "options": {"uncertainty": "ignore"}},
        "mimic_cxr": {"root": "data/mimic_cxr"},
    },
    "shifts": [{"source": "chexpert", "target": "mimic_cxr"}],
    "exclude_cells": [
        {"encoder": "pixel", "dataset": "isic2019"},
        {"encoder": "random_cnn", "dataset": "chexpert"},
    ],
    "seeds": [0, 1, 2],
    "fractions": [0.1, 0.5, 1.0],
    "perturbations": {"names": ["jpeg", "contrast"], "severities": [1, 2], "include_extra": True},
    "probes": {"logistic": {"c_grid": [0.01, 0.1, 1.0], "max_iter": 100, "tol": 1e-4}},
    "recalibrators": ["temperature", "isotonic"],
    "layers": [0.5, 1.0],
    "anchors": "v1",
    "split_seed": 0,
    "output_dir": "out",
}
BASE_DIR = Path("/tmp/crsbench-hash-base")


def _hash(raw: dict[str, Any], base: Path = BASE_DIR) -> str:
    return config_hash(parse_config(raw, base_dir=base))


BASE_HASH = _hash(RAW)


def _shuffle_keys(obj: Any, rng: random.Random) -> Any:
    if isinstance(obj, dict):
        items = list(obj.items())
        rng.shuffle(items)
        return {k: _shuffle_keys(v, rng) for k, v in items}
    if isinstance(obj, list):
        return [_shuffle_keys(v, rng) for v in obj]
    return obj


def _neutral_edits(raw: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    out = _shuffle_keys(copy.deepcopy(raw), rng)
    for key in ("seeds", "fractions", "layers", "recalibrators", "exclude_cells"):
        rng.shuffle(out[key])
    rng.shuffle(out["perturbations"]["names"])
    if rng.random() < 0.5:  # absolute instead of relative roots
        for spec in out["datasets"].values():
            spec["root"] = str(BASE_DIR / spec["root"])
    if rng.random() < 0.5:  # ./ prefix and redundant segments
        for spec in out["datasets"].values():
            if not spec["root"].startswith("/"):
                spec["root"] = "./data/../" + spec["root"]
    if rng.random() < 0.5:  # same floats, other spellings
        out["fractions"] = ["1e-1" if f == 0.1 else f for f in out["fractions"]]
        logistic = out["probes"]["logistic"]
        logistic["c_grid"] = [f"{c:e}" for c in logistic["c_grid"]]  # "1.000000e-02"
        logistic["c_grid"][-1] = float(logistic["c_grid"][-1]) * (1 + 1e-15)
        logistic["tol"] = f"{logistic['tol']:e}"
    # execution settings never change the hash
    out["batch_size"] = rng.choice([8, 64, 256])
    out["num_workers"] = rng.choice([0, 2, 8])
    out["device"] = rng.choice(["auto", "cpu", "cuda"])
    out["cache_dir"] = rng.choice(["cache", "/tmp/elsewhere"])
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_hash_invariant_under_neutral_edits(seed: int) -> None:
    assert _hash(_neutral_edits(RAW, random.Random(seed))) == BASE_HASH


def _set(path: tuple[Any, ...], value: Any):
    def edit(raw: dict[str, Any]) -> None:
        node = raw
        for p in path[:-1]:
            node = node[p]
        node[path[-1]] = value

    return edit


SEMANTIC_EDITS = {
    "add_seed": lambda r: r["seeds"].append(7),
    "drop_seed": lambda r: r["seeds"].pop(0),  # not the one add_seed appends
    "fraction": _set(("fractions", 0), 0.2),
    "c_value": _set(("probes", "logistic", "c_grid", 0), 0.02),
    "max_iter": _set(("probes", "logistic", "max_iter"), 101),
    "tol": _set(("probes", "logistic", "tol"), 1e-5),
    "knn_k": _set(("probes", "knn"), {"k": 7}),
    "no_mlp": _set(("probes", "mlp"), None),
    "extra": _set(("perturbations", "include_extra"), False),
    "severity": _set(("perturbations", "severities"), [1, 2, 3]),
    "perturbation": lambda r: r["perturbations"]["names"].append("rician"),
    "root": _set(("datasets", "isic2019", "root"), "data/isic2019_v2"),
    "option": _set(("datasets", "chexpert", "options", "uncertainty"), "zeros"),
    "max_images": _set(("datasets", "isic2019", "max_images"), 100),
    "encoder": lambda r: r["encoders"].append("random_vit"),
    "input_size": _set(("encoders", 1, "input_size"), 128),
    "weights": _set(("encoders", 0), {"name": "pixel", "weights_path": "w.pt"}),
    "remote": _set(("encoders", 0), {"name": "pixel", "allow_remote_code": True}),
    "anchors": _set(("anchors",), "v2"),
    "split_seed": _set(("split_seed",), 1),
    "layer": _set(("layers",), [0.25, 0.5, 1.0]),
    "recalibrator": lambda r: r["recalibrators"].append("dirichlet"),
    "lora": _set(("regimes",), {"lora": {"enabled": True}}),
    "no_shift": _set(("shifts",), []),
    "shift_rows": _set(("shifts", 0, "rows"), "all_frontal"),
    "no_exclusion": _set(("exclude_cells",), []),
    "other_exclusion": _set(
        ("exclude_cells",),
        [
            {"encoder": "pixel", "dataset": "chexpert"},
            {"encoder": "random_cnn", "dataset": "isic2019"},
        ],
    ),
}


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(sorted(SEMANTIC_EDITS)), min_size=1, max_size=3, unique=True),
    st.integers(min_value=0, max_value=2**32 - 1),
)
def test_hash_changes_under_semantic_edits(edits: list[str], seed: int) -> None:
    # an edit of the shift's rows needs the shift: applied after removing it, it is not an edit
    edits = [e for e in edits if not (e == "shift_rows" and "no_shift" in edits)]
    raw = copy.deepcopy(RAW)
    for name in edits:
        SEMANTIC_EDITS[name](raw)
    changed = _hash(_neutral_edits(raw, random.Random(seed)))
    assert changed != BASE_HASH, edits


def test_each_semantic_edit_alone_changes_the_hash() -> None:
    hashes = {}
    for name, edit in SEMANTIC_EDITS.items():
        raw = copy.deepcopy(RAW)
        edit(raw)
        hashes[name] = _hash(raw)
    assert BASE_HASH not in hashes.values()
    assert len(set(hashes.values())) == len(hashes)  # no two edits collide


def test_yaml_files_with_reordered_keys_and_float_spellings(tmp_path: Path) -> None:
    a = tmp_path / "a"
    b = tmp_path / "b"
    for d in (a, b):
        d.mkdir()
    (a / "c.yaml").write_text(yaml.safe_dump(RAW, sort_keys=False))
    text = yaml.safe_dump(dict(reversed(list(RAW.items()))), sort_keys=True)
    text = text.replace("- 0.1\n", "- 1.0e-1\n").replace(
        "root: data/isic2019", f"root: {a}/data/isic2019"
    )
    (b / "c.yaml").write_text(text)
    ha = config_hash(load_config(a / "c.yaml"))
    hb = config_hash(load_config(b / "c.yaml"))
    # b's other roots resolve under b/, so only compare once they match a's folder
    assert ha != hb
    text = text.replace("root: data/", f"root: {a}/data/")
    (b / "c.yaml").write_text(text)
    assert config_hash(load_config(b / "c.yaml")) == ha


def test_output_dir_relative_roots_do_not_depend_on_out(tmp_path: Path) -> None:
    raw = copy.deepcopy(RAW)
    raw["datasets"] = {"isic2019": {"root": "${output_dir}/data/isic2019"}}
    raw["shifts"] = []
    raw["exclude_cells"] = []
    h1 = config_hash(parse_config(raw, base_dir=tmp_path, output_dir=tmp_path / "x"))
    h2 = config_hash(parse_config(raw, base_dir=tmp_path, output_dir=tmp_path / "y"))
    assert h1 == h2 and len(h1) == 64


def test_an_empty_exclude_cells_hashes_like_a_config_without_the_key() -> None:
    raw = copy.deepcopy(RAW)
    raw["exclude_cells"] = []
    without = {k: v for k, v in raw.items() if k != "exclude_cells"}
    assert _hash(raw) == _hash(without) != BASE_HASH


def test_the_default_shift_rows_are_the_official_test_split() -> None:
    raw = copy.deepcopy(RAW)
    raw["shifts"] = [{"source": "chexpert", "target": "mimic_cxr", "rows": "official_test"}]
    assert _hash(raw) == BASE_HASH
