"""The runner end to end on a reduced config: store contents, plan agreement, status, exports."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from crsbench.config import config_hash, parse_config
from crsbench.runs.pipeline import RunOptions, run_benchmark
from crsbench.runs.plan import plan_cells

from .runner_fixtures import tiny_config_dict, write_tiny_data


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("runner")
    data = write_tiny_data(root / "data")
    cfg = parse_config(tiny_config_dict(data, root / "out"), base_dir=root)
    events: list[tuple[str, dict]] = []
    summary = run_benchmark(
        cfg, RunOptions(progress=False, on_event=lambda e, i: events.append((e, i)))
    )
    return cfg, summary, events


def _runs(out: Path):
    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as con:
        return con.execute("SELECT * FROM runs").df(), con.execute("SELECT * FROM metrics").df()


def test_store_has_exactly_the_planned_records(finished_run):
    cfg, summary, events = finished_run
    runs, metrics = _runs(Path(cfg.output_dir))
    modalities = {"isic2019": "dermoscopy", "chexpert": "chest_xray", "mimic_cxr": "chest_xray"}
    planned = {i.key(config_hash(cfg)) for c in plan_cells(cfg, modalities) for i in c.identities}
    assert set(runs["run_key"]) == planned
    assert len(runs) == summary.n_records_total == summary.n_records_written
    # Per seed (worked by hand). ISIC: logistic 5 fractions + 15 conditions + 2 recalibrators,
    # 1 extra layer, knn and mlp 5 fractions + 15 conditions each = 22 + 1 + 40 = 63.
    # CheXpert adds the shift row to logistic, each recalibrator and each control:
    # 25 + 1 + 42 = 68. Two seeds: 2 * 63 + 2 * 68 = 262.
    assert len(runs) == 2 * (22 + 1 + 40) + 2 * (25 + 1 + 42) == 262
    assert len(metrics) * 2 == len(runs)  # two seeds aggregated
    assert (metrics["n_seeds"] == 2).all() if "n_seeds" in metrics else True
    assert [e for e, _ in events].count("cell") == 2


def test_values_and_provenance_filled(finished_run):
    cfg, _, _ = finished_run
    every, _ = _runs(Path(cfg.output_dir))
    # a calibration split below the recalibration minimum gives NaN rows with the reason
    undefined = every["details"].map(lambda d: json.loads(d).get("recal_choice") == "undefined")
    assert (every.loc[undefined, "recalibrator"] != "none").all()
    assert every.loc[undefined, "auroc"].isna().all()
    runs = every[~undefined]
    for col in ("auroc", "ece", "brier", "nll"):
        assert runs[col].notna().all(), col
    assert runs["auroc"].between(0, 1).all() and runs["ece"].between(0, 1).all()
    for col in (
        "config_hash",
        "package_version",
        "encoder_revision",
        "dataset_revision",
        "anchors_version",
    ):
        assert runs[col].astype(str).str.len().min() > 0, col
    assert (runs["config_hash"] == config_hash(cfg)).all()
    shift = runs[runs["condition"] == "shift"]
    assert set(shift["eval_dataset"]) == {"mimic_cxr"} and set(shift["dataset"]) == {"chexpert"}
    from crsbench.runs.prepare import current_revisions

    mimic_revision = current_revisions(cfg)[0]["mimic_cxr"]
    # the shift is scored on MIMIC's official test split, frontal views (read from the CSVs)
    root = cfg.datasets["mimic_cxr"].root
    meta = pd.read_csv(root / "mimic-cxr-2.0.0-metadata.csv", dtype=str)
    split = pd.read_csv(root / "mimic-cxr-2.0.0-split.csv", dtype=str)
    test = meta.merge(split[["dicom_id", "split"]], on="dicom_id")
    test = test[test["ViewPosition"].isin(["PA", "AP"]) & (test["split"] == "test")]
    expected = {"rows": "official_test", "n_images": len(test),
                "n_patients": test["subject_id"].nunique()}  # fmt: skip
    assert 0 < len(test) < len(meta[meta["ViewPosition"].isin(["PA", "AP"])])
    for text in shift["details"]:
        details = json.loads(text)
        assert details["shift_rows"] == expected and details["n_eval"] == len(test)
        # the target's revision decides "already done" like the probe dataset's
        assert details["eval_dataset_revision"] == mimic_revision
    details = json.loads(runs.loc[runs["probe"] == "logistic", "details"].iloc[0])
    assert details["C"] in (0.01, 1.0, 100.0)
    # every full-label logistic row, depth 0.5 included, records its validation AUROC (the
    # layer-depth sweep chooses on it)
    full = runs.query("probe == 'logistic' and fraction == 1.0 and condition == 'clean' "
                      "and recalibrator == 'none' and regime == 'frozen'")  # fmt: skip
    vals = [json.loads(d).get("val_auroc") for d in full["details"]]
    assert {0.5, 1.0} <= set(full["layer"]) and all(v is None or 0 <= v <= 1 for v in vals)
    assert sum(v is not None for v in vals) >= len(vals) // 2
    # the two seeds draw different label subsamples at 25 %, so their records differ
    part = runs.query("probe == 'logistic' and fraction == 0.25 and dataset == 'chexpert'")
    assert len(part) == 2 and part["auroc"].nunique() == 2


def test_second_run_is_a_no_op_and_exports_exist(finished_run):
    cfg, _, _ = finished_run
    before, _ = _runs(Path(cfg.output_dir))
    summary = run_benchmark(cfg, RunOptions(progress=False))
    after, _ = _runs(Path(cfg.output_dir))
    assert summary.n_records_written == 0 and summary.n_cells_done_before == 2
    assert len(before) == len(after)
    export = Path(cfg.output_dir) / "export"
    assert any(export.glob("*.parquet")) and any(export.glob("*.csv"))


def test_status_reports_done(finished_run):
    from crsbench.runs.status import grid_status

    cfg, _, _ = finished_run
    _, rows = grid_status(cfg)
    assert len(rows) == 2 and {r["state"] for r in rows} == {"done"}
    assert all(r["done"] == r["planned"] > 0 for r in rows)


def test_reliability_table_is_derived_from_the_runs(finished_run):
    cfg, _, _ = finished_run
    with duckdb.connect(str(Path(cfg.output_dir) / "results.duckdb"), read_only=True) as con:
        rel = con.execute("SELECT * FROM reliability").df()
    runs, _ = _runs(Path(cfg.output_dir))
    main = runs[(runs["condition"] == "clean") & (runs["probe"] == "logistic")
                & (runs["fraction"] == 1.0) & (runs["layer"] == 1.0) & runs["ece"].notna()]  # fmt: skip
    # one group per defined clean full-label row: 2 datasets x 2 seeds x (none + each
    # recalibrator whose calibration split is large enough), each with at least one bin
    expected = set(zip(main["dataset"], main["seed"], main["recalibrator"], strict=True))
    groups = set(rel.groupby(["dataset", "seed", "recalibrator"]).size().index)
    assert groups == expected and {(d, s) for d, s, r in expected if r == "none"} == {
        (d, s) for d in ("chexpert", "isic2019") for s in (0, 1)
    }  # fmt: skip
    assert rel["bin"].between(0, 14).all() and (rel["count"] > 0).all()


def test_report_is_built_from_the_runners_store(finished_run, tmp_path):
    from crsbench.cli.report_command import write_report

    cfg, _, _ = finished_run
    index = write_report(Path(cfg.output_dir), tmp_path / "report", n_replicates=200)
    html = index.read_text(encoding="utf-8")
    for section in ("Leaderboard", "Calibration", "Robustness", "Provenance"):
        assert section in html, section
    assert "no 'reliability' table" not in html  # true reliability diagrams from the runs
    assert (tmp_path / "report" / "figures" / "reliability.png").is_file()
