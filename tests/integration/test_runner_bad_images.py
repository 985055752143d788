"""One unreadable image in each split never loses a cell: quarantined, named, counted.

A synthetic ISIC of 400 images (the 1 % budget is then exactly 4 images) gets one broken
file in each of train (truncated), val (not an image), calib (missing) and test (empty);
``crsbench run`` goes through the real pipeline with the offline ``pixel`` encoder.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.config import parse_config
from crsbench.core.errors import DataError
from crsbench.runs.cell_inputs import cell_data
from crsbench.runs.extract_cell import extract_cell_features
from crsbench.runs.extraction import RunExtraction
from crsbench.runs.plan import plan_cells
from crsbench.runs.prepare import prepare_datasets

N_IMAGES = 400
BREAK = {"train": "truncated", "val": "not_an_image", "calib": "missing", "test": "empty"}


def _config(data: Path, out: Path) -> dict:
    return {
        "encoders": ["pixel"],
        "datasets": {"isic2019": {"root": str(data / "isic2019")}},
        "seeds": [0, 1],
        "fractions": [0.05, 1.0],
        "perturbations": {"names": ["jpeg"], "severities": [2], "include_extra": False},
        "recalibrators": ["temperature"],
        "layers": [1.0],
        "probes": {
            "logistic": {"c_grid": [0.1, 10.0], "max_iter": 50, "tol": 1e-3},
            "mlp": None,  # kNN stays: a control probe on the renumbered subsamples
        },
        "output_dir": str(out),
        "device": "cpu",
        "num_workers": 0,
    }


def _break(path: Path, how: str) -> None:
    if how == "truncated":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    elif how == "not_an_image":
        path.write_bytes(b"<html><body>404 not found</body></html>")
    elif how == "missing":
        path.unlink()
    else:
        path.write_bytes(b"")


@pytest.fixture(scope="module")
def broken(tmp_path_factory):
    """Data with one bad image per split, its config, the bad rows, and `crsbench run`."""
    from crsbench.datasets.synthetic import WRITERS, resolve_size

    root = tmp_path_factory.mktemp("bad_images")
    size = resolve_size({"isic2019": N_IMAGES, "side": 32})
    WRITERS["isic2019"](root / "data" / "isic2019", size=size, seed=0)
    cfg_dict = _config(root / "data", root / "out")
    cfg = parse_config(cfg_dict, base_dir=root)
    prep = prepare_datasets(cfg)["isic2019"]  # intact data: the reference splits/subsets
    bad = {}
    for split, how in BREAK.items():
        row = int(np.asarray(getattr(prep.splits, split))[3])
        bad[split] = row
        _break(Path(prep.dataset.paths[row]), how)
    config_file = root / "config.yaml"
    config_file.write_text(yaml.safe_dump(cfg_dict))
    result = CliRunner().invoke(app, ["run", str(config_file), "--no-progress"])
    return cfg, config_file, prep, bad, result


def test_the_run_completes_and_names_each_bad_file_once(broken):
    _, _, prep, bad, result = broken
    assert result.exit_code == 0, result.output
    out = result.output
    for split, row in bad.items():
        path = prep.dataset.paths[row]
        assert out.count(f"quarantined isic2019 {split} image {prep.dataset.image_ids[row]}") == 1
        assert Path(path).name in out
    for reason in ("truncated", "not_an_image", "missing", "empty_file"):
        assert reason in out


def test_every_record_counts_one_quarantined_image_per_split(broken):
    cfg, _, prep, bad, _ = broken
    with duckdb.connect(str(Path(cfg.output_dir) / "results.duckdb"), read_only=True) as con:
        details = [json.loads(t) for (t,) in con.execute("SELECT details FROM runs").fetchall()]
        table = con.execute("SELECT split, image_id, error_class FROM quarantine").fetchall()
    assert details and all(
        d["n_quarantined"] == {"train": 1, "val": 1, "calib": 1, "test": 1} for d in details
    )
    full = [d for d in details if "n_train" in d and d.get("C") is not None]
    assert {d["n_train"] for d in full} >= {len(prep.splits.train) - 1}
    ids = prep.dataset.image_ids
    assert sorted(table) == sorted(
        (s, str(ids[r]), {"empty": "empty_file"}.get(BREAK[s], BREAK[s])) for s, r in bad.items()
    )
    exported = (Path(cfg.output_dir) / "export" / "runs.csv").read_text()
    assert "n_quarantined" in exported


def test_subsample_membership_is_the_intact_one_minus_the_bad_row(broken):
    cfg, _, prep, bad, _ = broken
    plan = plan_cells(cfg, {"isic2019": prep.dataset.card.modality})[0]
    again = prepare_datasets(cfg)["isic2019"]  # labels only: identical subsamples
    feats, _ = extract_cell_features(
        RunExtraction.from_config(cfg), plan, again, None, progress=False
    )  # cache hits
    cell = cell_data(plan, again, feats, None)
    assert cell.n_quarantined == {"train": 1, "val": 1, "calib": 1, "test": 1}
    for split in ("val", "calib", "test"):
        assert bad[split] not in getattr(cell, split)
    for key, rows in prep.subsets.items():
        intact = set(prep.splits.train[rows].tolist())
        assert set(cell.train[cell.subsets[key]].tolist()) == intact - {bad["train"]}, key


def test_status_names_the_quarantined_files(broken):
    _, config_file, prep, bad, _ = broken
    result = CliRunner().invoke(app, ["status", str(config_file)])
    assert result.exit_code == 0, result.output
    assert "isic2019: 4 image(s) quarantined (calib 1, test 1, train 1, val 1)" in result.output
    for split, row in bad.items():
        assert f"{split} {prep.dataset.image_ids[row]}: {prep.dataset.paths[row]}" in result.output


def test_check_agrees_within_the_budget_and_both_fail_above_it(broken):
    from crsbench.datasets import check

    cfg, _, prep, bad, _ = broken
    report = check("isic2019", cfg.datasets["isic2019"].root)
    assert report.ok and len(report.file_problems) == 4
    assert any("within what `crsbench run` quarantines" in w for w in report.warnings)
    extra = Path(prep.dataset.paths[int(prep.splits.train[7])])
    saved = extra.read_bytes()
    extra.write_bytes(b"")  # a fifth bad image: above 1 % of 400, both refuse
    try:
        assert not check("isic2019", cfg.datasets["isic2019"].root).ok
        again = prepare_datasets(cfg)["isic2019"]
        plan = plan_cells(cfg, {"isic2019": again.dataset.card.modality})[0]
        feats, _ = extract_cell_features(
            RunExtraction.from_config(cfg), plan, again, None, progress=False
        )
        with pytest.raises(DataError, match=r"at most 1% of its 400 images \(4\)") as exc:
            cell_data(plan, again, feats, None)
        assert extra.name in str(exc.value)
    finally:
        extra.write_bytes(saved)


def test_missing_files_above_the_budget_are_refused_before_any_work(broken, tmp_path):
    cfg, _, prep, _, _ = broken
    moved = [Path(prep.dataset.paths[int(r)]) for r in prep.splits.train[10:14]]
    for p in moved:
        p.rename(tmp_path / p.name)  # 4 more missing: 5 in all with the calib one
    try:
        with pytest.raises(DataError, match="Got 5 instead") as exc:
            prepare_datasets(cfg)
        assert moved[0].name in str(exc.value)
    finally:
        for p in moved:
            (tmp_path / p.name).rename(p)
