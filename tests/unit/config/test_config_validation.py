"""Config parsing and validation: unknown keys with suggestions, types, ranges, paths, names."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from crsbench.config import (
    BenchmarkConfig,
    load_config,
    load_packaged_config,
    parse_config,
    validate_names,
    validate_paths,
)
from crsbench.core.errors import ConfigError
from crsbench.protocol import C_GRID

BASE = {"encoders": ["pixel"], "datasets": {"isic2019": {"root": "data/isic2019"}}}


def _parse(tmp_path: Path, **changes: object) -> BenchmarkConfig:
    return parse_config({**BASE, **changes}, base_dir=tmp_path, source="cfg.yaml")


def _error(tmp_path: Path, **changes: object) -> str:
    with pytest.raises(ConfigError) as info:
        _parse(tmp_path, **changes)
    return str(info.value)


def test_defaults_follow_the_protocol(tmp_path: Path) -> None:
    cfg = _parse(tmp_path)
    assert cfg.seeds == [0, 1, 2, 3, 4]
    assert cfg.fractions == [0.01, 0.05, 0.10, 0.25, 1.0]
    assert cfg.perturbations.severities == [1, 2, 3] and len(cfg.perturbations.names) == 5
    assert len(C_GRID) == 13 and cfg.probes.logistic.c_grid == list(C_GRID)
    assert C_GRID[0] == pytest.approx(1e-4) and C_GRID[-1] == pytest.approx(100.0)
    assert cfg.probes.names == ["logistic", "mlp", "knn"]
    assert (
        cfg.probes.knn is not None and cfg.probes.knn.k == 5 and cfg.probes.knn.metric == "cosine"
    )
    assert cfg.recalibrators == ["temperature", "vector", "isotonic", "dirichlet"]
    assert cfg.regimes.lora.rank == 8 and cfg.regimes.lora.alpha == 16
    assert cfg.regimes.lora.seeds == [0, 1, 2]
    assert cfg.datasets["isic2019"].root == tmp_path / "data" / "isic2019"
    assert cfg.resolved_cache_dir == tmp_path / "results" / "cache"


def test_unknown_top_level_key_suggests_the_right_one(tmp_path: Path) -> None:
    msg = _error(tmp_path, seed=[0, 1])
    assert "seed: unknown key" in msg and "Did you mean 'seeds'?" in msg


def test_unknown_nested_key_names_the_path_and_suggests(tmp_path: Path) -> None:
    msg = _error(tmp_path, probes={"logistc": {"max_iter": 10}})
    assert "probes.logistc: unknown key" in msg and "Did you mean 'logistic'?" in msg
    msg = _error(tmp_path, datasets={"isic2019": {"root": "x", "max_image": 3}})
    assert "datasets.isic2019.max_image" in msg and "'max_images'" in msg
    msg = _error(tmp_path, encoders=[{"name": "pixel", "weigths_path": "w.pt"}])
    assert "encoders.0.weigths_path" in msg and "'weights_path'" in msg


def test_every_problem_is_listed(tmp_path: Path) -> None:
    msg = _error(tmp_path, seed=1, batch_size=0, device="gpu")
    assert "seed:" in msg and "batch_size:" in msg and "device:" in msg


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"seeds": "abc"}, "seeds"),
        ({"seeds": [0, "x"]}, "seeds.1"),
        ({"batch_size": "big"}, "batch_size"),
        ({"perturbations": {"include_extra": "sometimes"}}, "perturbations.include_extra"),
        ({"probes": {"knn": {"metric": "manhattan"}}}, "probes.knn.metric"),
    ],
)
def test_wrong_types_are_errors_naming_the_key(tmp_path: Path, changes: dict, needle: str) -> None:
    msg = _error(tmp_path, **changes)
    assert f"{needle}:" in msg and "Got" in msg


@pytest.mark.parametrize("bad", [0.0, 1.5, -0.1])
def test_fraction_outside_unit_interval(tmp_path: Path, bad: float) -> None:
    msg = _error(tmp_path, fractions=[bad, 1.0])
    assert "fractions:" in msg and "(0, 1]" in msg and str(bad) in msg


def test_fractions_must_include_full_labels_and_be_unique(tmp_path: Path) -> None:
    assert "must include 1.0" in _error(tmp_path, fractions=[0.1, 0.5])
    assert "duplicates" in _error(tmp_path, fractions=[0.1, 0.1, 1.0])


def test_empty_or_negative_seeds(tmp_path: Path) -> None:
    assert "seeds:" in _error(tmp_path, seeds=[])
    assert "seeds:" in _error(tmp_path, seeds=[-1])
    assert "duplicates" in _error(tmp_path, seeds=[1, 1])


def test_layers_severities_recalibrators_ranges(tmp_path: Path) -> None:
    assert "layers:" in _error(tmp_path, layers=[0.3, 1.0])
    assert "must include 1.0" in _error(tmp_path, layers=[0.5])
    assert "severities" in _error(tmp_path, perturbations={"severities": [0, 4]})
    assert "recalibrators.0" in _error(tmp_path, recalibrators=["platt"])
    assert "c_grid" in _error(tmp_path, probes={"logistic": {"c_grid": [0.0, 1.0]}})


def test_shift_must_reference_datasets(tmp_path: Path) -> None:
    msg = _error(tmp_path, shifts=[{"source": "isic2019", "target": "mimic_cxr"}])
    assert "shifts.0.target" in msg and "mimic_cxr" in msg


def test_newer_config_version_refused(tmp_path: Path) -> None:
    assert "version:" in _error(tmp_path, version=2)


def test_duplicate_encoders_and_empty_lists(tmp_path: Path) -> None:
    assert "encoder names" in _error(tmp_path, encoders=["pixel", "pixel"])
    assert "encoders:" in _error(tmp_path, encoders=[])
    assert "datasets:" in _error(tmp_path, datasets={})


def test_models_are_frozen(tmp_path: Path) -> None:
    cfg = _parse(tmp_path)
    with pytest.raises(Exception, match="frozen"):
        cfg.seeds = [1]  # type: ignore[misc]


def test_load_config_resolves_relative_to_the_file(tmp_path: Path) -> None:
    folder = tmp_path / "cfgs"
    folder.mkdir()
    (folder / "b.yaml").write_text(yaml.safe_dump({**BASE, "output_dir": "../out"}))
    cfg = load_config(folder / "b.yaml")
    assert cfg.datasets["isic2019"].root == folder / "data" / "isic2019"
    assert cfg.output_dir == tmp_path / "out"
    assert load_config(folder / "b.yaml", output_dir=tmp_path / "o2").output_dir == tmp_path / "o2"


def test_bad_yaml_empty_and_missing_files(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("seeds: [0, 1\nencoders: x\n")
    with pytest.raises(ConfigError, match=r"bad.yaml: not valid YAML at line"):
        load_config(tmp_path / "bad.yaml")
    (tmp_path / "empty.yaml").write_text("")
    with pytest.raises(ConfigError, match="empty"):
        load_config(tmp_path / "empty.yaml")
    (tmp_path / "list.yaml").write_text("- a\n")
    with pytest.raises(ConfigError, match="must be a mapping"):
        load_config(tmp_path / "list.yaml")
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")


def test_environment_placeholders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ds = {"isic2019": {"root": "${MY_DATA:-fallback}/isic"}}
    monkeypatch.delenv("MY_DATA", raising=False)
    assert _parse(tmp_path, datasets=ds).datasets["isic2019"].root == tmp_path / "fallback" / "isic"
    monkeypatch.setenv("MY_DATA", str(tmp_path / "real"))
    assert _parse(tmp_path, datasets=ds).datasets["isic2019"].root == tmp_path / "real" / "isic"
    msg = _error(tmp_path, datasets={"isic2019": {"root": "${UNSET_CRSBENCH_VAR}/x"}})
    assert "datasets.isic2019.root" in msg and "UNSET_CRSBENCH_VAR" in msg


def test_output_dir_placeholder_follows_out(tmp_path: Path) -> None:
    ds = {"isic2019": {"root": "${output_dir}/data/isic2019"}}
    cfg = parse_config({**BASE, "datasets": ds}, base_dir=tmp_path, output_dir=tmp_path / "o")
    assert cfg.datasets["isic2019"].root == tmp_path / "o" / "data" / "isic2019"
    assert "must start the path" in _error(
        tmp_path, datasets={"isic2019": {"root": "a/${output_dir}"}}
    )


def test_missing_dataset_root_named(tmp_path: Path) -> None:
    cfg = _parse(tmp_path, datasets={"isic2019": {"root": "a"}, "aptos2019": {"root": "b"}})
    (tmp_path / "b").mkdir()
    with pytest.raises(ConfigError) as info:
        validate_paths(cfg)
    msg = str(info.value)
    assert "datasets.isic2019.root" in msg and str(tmp_path / "a") in msg
    assert "aptos2019" not in msg
    (tmp_path / "a").mkdir()
    validate_paths(cfg)


def test_missing_weights_and_anchor_files(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    cfg = _parse(
        tmp_path,
        datasets={"isic2019": {"root": "d"}},
        encoders=[{"name": "resnet50", "weights_path": "w/r50.safetensors"}],
        anchors="anchors/custom.yaml",
    )
    with pytest.raises(ConfigError) as info:
        validate_paths(cfg)
    assert "encoders.0.weights_path" in str(info.value) and "anchors:" in str(info.value)


def test_unknown_encoder_name_with_suggestions(tmp_path: Path) -> None:
    cfg = _parse(tmp_path, encoders=["random_cn", "pixel"])
    with pytest.raises(ConfigError) as info:
        validate_names(cfg, encoders=["pixel", "random_cnn", "resnet50"], datasets=["isic2019"])
    msg = str(info.value)
    assert "encoders.0.name: unknown encoder 'random_cn'" in msg and "'random_cnn'" in msg
    assert "pixel'" not in msg.split("Known")[0]
    validate_names(
        _parse(tmp_path),
        encoders=["pixel"],
        datasets=["isic2019"],
        perturbations=["gaussian_blur", "jpeg", "contrast", "rician", "fov_crop"],
    )


def test_unknown_dataset_and_perturbation_names(tmp_path: Path) -> None:
    cfg = _parse(tmp_path, perturbations={"names": ["gausian_blur"]})
    with pytest.raises(ConfigError) as info:
        validate_names(
            cfg, encoders=["pixel"], datasets=["isic", "aptos2019"], perturbations=["gaussian_blur"]
        )
    msg = str(info.value)
    assert "datasets.isic2019: unknown dataset" in msg
    assert "perturbations.names.0" in msg and "'gaussian_blur'" in msg


@pytest.mark.parametrize("name", ["paper", "demo"])
def test_shipped_configs_parse(name: str, tmp_path: Path) -> None:
    cfg = load_packaged_config(name, output_dir=tmp_path / "out")
    # the demo cuts the seeds to two (demo.yaml, `seeds`); every other axis is the protocol's
    assert cfg.seeds == ([0, 1, 2, 3, 4] if name == "paper" else [0, 1])
    assert len(cfg.fractions) == 5
    assert len(cfg.perturbations.names) * len(cfg.perturbations.severities) == 15
    assert cfg.probes.names == ["logistic", "mlp", "knn"] and len(cfg.recalibrators) == 4
    assert {"isic2019", "aptos2019", "chexpert"} <= set(cfg.probe_datasets)
    targets = {"paper": ["mimic_cxr", "nih_cxr14", "padchest", "vindr_cxr"],
               "demo": ["mimic_cxr", "nih_cxr14"]}  # fmt: skip
    assert cfg.shift_targets == targets[name]
    assert [s.source for s in cfg.shifts] == ["chexpert"] * len(targets[name])
    assert all(d.root.is_absolute() for d in cfg.datasets.values())
    if name == "paper":
        assert len(cfg.encoders) == 15 and cfg.layers == [0.25, 0.5, 0.75, 1.0]
    else:
        assert len(cfg.encoders) >= 4 and "efficientnet_lite0_imagenet" in [
            e.name for e in cfg.encoders
        ]
        assert cfg.datasets["chexpert"].root == tmp_path / "out" / "data" / "chexpert"
        from crsbench.encoders import get_card

        sizes = [e.input_size or get_card(e.name).input_size for e in cfg.encoders]
        assert all(32 <= s <= 128 for s in sizes)
        assert cfg.perturbations.working_size == max(sizes)  # the demo's pinned W
        assert cfg.lora_fractions == cfg.fractions and len(cfg.lora_encoders) == 2


def test_unknown_shipped_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="Did you mean 'demo'"):
        load_packaged_config("dmeo")


@pytest.mark.parametrize("name", ["paper", "demo"])
def test_shipped_config_names_are_registered(name: str) -> None:
    """Every encoder, dataset and perturbation named by a shipped config exists."""
    validate_names(load_packaged_config(name))


def _lora(**kw: object) -> dict:
    return {"lora": {"enabled": True, **kw}}


def test_lora_restrictions_default_to_everything(tmp_path: Path) -> None:
    cfg = _parse(tmp_path, encoders=["pixel", "random_cnn"], regimes=_lora())
    assert cfg.regimes.lora.lr_factors == [1.0, 3.0, 10.0]
    assert cfg.lora_fractions == cfg.fractions
    assert [e.name for e in cfg.lora_encoders] == ["pixel", "random_cnn"]
    cut = _parse(tmp_path, encoders=["pixel", "random_cnn"],
                 regimes=_lora(fractions=[1.0, 0.1], encoders=["random_cnn"]))  # fmt: skip
    assert cut.lora_fractions == [0.10, 1.0]  # config order
    assert [e.name for e in cut.lora_encoders] == ["random_cnn"]


def test_lora_restrictions_are_checked_against_the_grid(tmp_path: Path) -> None:
    msg = _error(tmp_path, regimes=_lora(fractions=[0.5, 1.0]))
    assert "regimes.lora.fractions must be a subset of fractions" in msg and "0.5" in msg
    assert "must include 1.0" in _error(tmp_path, regimes=_lora(fractions=[0.1]))
    msg = _error(tmp_path, regimes=_lora(encoders=["random_vit"]))
    assert "regimes.lora.encoders must name entries of encoders (pixel)" in msg
    assert "random_vit" in msg
    assert "factor must be > 0" in _error(tmp_path, regimes=_lora(lr_factors=[1.0, 0.0]))
    assert "duplicates" in _error(tmp_path, regimes=_lora(seeds=[1, 1]))
