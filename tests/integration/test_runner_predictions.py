"""Per-sample predictions through the real pipeline: stored with the records, equal to the
stored metrics, exported and repaired, and the bootstrap the report and leaderboard use."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

from crsbench.config import parse_config
from crsbench.metrics import expected_calibration_error, macro_auroc
from crsbench.protocol import PAPER_CONDITIONS
from crsbench.runs.pipeline import RunOptions, run_benchmark
from crsbench.runs.prepare import prepare_datasets
from crsbench.scoring import axes_from_runs, score_cells
from crsbench.stats.cell_predictions import CellPredictions, EvalSplit
from crsbench.stats.leaderboard import build_leaderboard
from crsbench.stats.patient_bootstrap import (
    TEST_PATIENTS_X_SEEDS,
    patient_seed_bootstrap,
)
from crsbench.stats.uncertainty import crs_uncertainty
from crsbench.store import load_runs
from crsbench.store.repair import repair_store

from .runner_fixtures import tiny_config_dict, write_tiny_data


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("preds")
    data = write_tiny_data(root / "data")
    cfg = parse_config(tiny_config_dict(data, root / "out", ("pixel", "random_cnn")), base_dir=root)
    run_benchmark(cfg, RunOptions(progress=False))
    return cfg, Path(cfg.output_dir)


def _query(out: Path, sql: str) -> pd.DataFrame:
    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as con:
        return con.execute(sql).df()


def _decode(blob, n, k, dtype) -> np.ndarray:
    return np.frombuffer(bytes(blob), dtype=np.dtype(dtype)).reshape(n, k).astype(float)


def _joined(out: Path) -> pd.DataFrame:
    return _query(
        out,
        "SELECT r.*, p.split AS pred_split, s.dataset AS rows_of, s.split AS rows_split, s.task, "
        "s.image_ids, s.groups, s.n_rows, s.n_targets, s.targets, b.n_outputs, b.dtype, b.prob, "
        "p.prob_key FROM predictions p JOIN runs r USING (run_key) JOIN eval_splits s USING "
        "(split_key) JOIN prediction_blobs b USING (prob_key)",
    )


def test_exactly_the_main_rows_carry_predictions(store):
    _, out = store
    runs = _query(out, "SELECT * FROM runs")
    pred = _query(out, "SELECT * FROM predictions")
    main = runs[(runs["regime"] == "frozen") & (runs["probe"] == "logistic")
                & (runs["layer"] == 1.0) & (runs["recalibrator"] == "none")]  # fmt: skip
    test_keys = set(pred.loc[pred["split"] == "test", "run_key"])
    assert test_keys == set(main["run_key"])
    clean_full = main[(main["condition"] == "clean") & (main["fraction"] == 1.0)]
    assert set(pred.loc[pred["split"] == "val", "run_key"]) == set(clean_full["run_key"])


def test_rows_are_the_test_split_with_patients(store):
    cfg, out = store
    j = _joined(out)
    prepared = prepare_datasets(cfg)
    for ds in ("isic2019", "chexpert"):
        p = prepared[ds]
        rows = j[(j["rows_of"] == ds) & (j["rows_split"] == "test")].iloc[0]
        assert list(rows["image_ids"]) == [str(i) for i in p.dataset.image_ids[p.splits.test]]
        assert list(rows["groups"]) == [str(g) for g in p.dataset.groups[p.splits.test]]
    shift = j[j["condition"] == "shift"].iloc[0]
    target = prepared["mimic_cxr"]
    assert shift["rows_of"] == "mimic_cxr" and shift["rows_split"] == "shift"
    assert list(shift["image_ids"]) == [str(i) for i in target.dataset.image_ids[target.eval_rows]]


def test_stored_probabilities_reproduce_the_stored_metrics(store):
    _, out = store
    j = _joined(out)
    j = j[j["pred_split"] == "test"]
    assert len(j) > 100
    for r in j.itertuples(index=False):
        t = _decode(r.targets, r.n_rows, r.n_targets, "<f4")
        y = t[:, 0].astype(int) if r.task == "multiclass" else t
        prob = _decode(r.prob, r.n_rows, r.n_outputs, r.dtype)
        assert macro_auroc(y, prob, r.task) == pytest.approx(r.auroc, abs=1e-12), r.run_key
        ece = expected_calibration_error(y, prob, r.task, n_bins=15)
        assert ece == pytest.approx(r.ece, abs=1e-6), r.run_key


def test_full_label_fit_stored_once_for_every_seed(store):
    _, out = store
    j = _joined(out)
    clean = j[(j["condition"] == "clean") & (j["fraction"] == 1.0) & (j["pred_split"] == "test")]
    assert (clean.groupby(["encoder", "dataset"])["prob_key"].nunique() == 1).all()
    low = j[(j["condition"] == "clean") & (j["fraction"] == 0.01) & (j["pred_split"] == "test")]
    assert (low.groupby(["encoder", "dataset"])["seed"].nunique() == 2).all()


def _independent_cells(out: Path) -> list[CellPredictions]:
    """The bootstrap's inputs assembled straight from the tables (not through the reader)."""
    j = _joined(out)
    j = j[j["pred_split"] == "test"]
    cells = []
    for (enc, ds), g in j[j["dataset"] != "mimic_cxr"].groupby(["encoder", "dataset"]):

        def probs(sub: pd.DataFrame) -> np.ndarray:
            sub = sub.sort_values("seed")
            return np.stack([_decode(r.prob, r.n_rows, r.n_outputs, r.dtype)
                             for r in sub.itertuples(index=False)])  # fmt: skip

        def split(r) -> EvalSplit:
            t = _decode(r.targets, r.n_rows, r.n_targets, "<f4")
            return EvalSplit(r.rows_of, np.asarray(r.groups, dtype=str),
                             t[:, 0].astype(int) if r.task == "multiclass" else t)  # fmt: skip

        clean = g[(g["condition"] == "clean") & (g["fraction"] == 1.0)]
        conds = {c: probs(g[(g["condition"] == c[0]) & (g["severity"] == c[1])])
                 for c in PAPER_CONDITIONS}  # fmt: skip
        fracs = {f: probs(g[(g["condition"] == "clean") & np.isclose(g["fraction"], f)])
                 for f in (0.01, 0.05, 0.10, 0.25)}  # fmt: skip
        sh = g[g["condition"] == "shift"]
        shift = (split(sh.iloc[0]), probs(sh)) if len(sh) else None
        first = clean.iloc[0]
        cells.append(CellPredictions(enc, ds, first["task"], split(first), (0, 1), probs(clean),
                                     fracs, conds, shift))  # fmt: skip
    return cells


def test_store_bootstrap_equals_the_engine_on_the_same_inputs(store):
    _, out = store
    per_seed = axes_from_runs(load_runs(out))
    unc = crs_uncertainty(per_seed, store=out, n_replicates=300, seed=3)
    assert unc.method == TEST_PATIENTS_X_SEEDS and unc.note == ""
    ref = patient_seed_bootstrap(_independent_cells(out), n_replicates=300, seed=3)
    np.testing.assert_allclose(unc.result.replicates, ref.replicates, rtol=0, atol=1e-12)
    cols = ["encoder", "CRS", "crs_ci_low", "crs_ci_high", "p_rank1", "p_top3", "tier"]
    pd.testing.assert_frame_equal(unc.result.ranks[cols], ref.ranks[cols])
    assert unc.n_patients == ref.n_patients and set(unc.n_patients) == {
        "isic2019", "chexpert", "mimic_cxr"}  # fmt: skip
    # the point estimate is the store's own CRS (the predictions reproduce every AUROC exactly,
    # ECE to float32 rounding of the probabilities)
    board = build_leaderboard(load_runs(out), n_replicates=300, seed=3, store=out)
    got = dict(zip(unc.result.ranks["encoder"], unc.result.ranks["CRS"], strict=True))
    for enc, crs in zip(board["encoder"], board["CRS"], strict=True):
        assert got[enc] == pytest.approx(crs, abs=1e-7)
    assert set(board["interval"]) == {TEST_PATIENTS_X_SEEDS}
    assert board.attrs["n_patients"] == unc.n_patients and board.attrs["interval_note"] == ""


def test_score_with_a_pool_writes_the_leaderboard_of_one_process(store, tmp_path):
    from typer.testing import CliRunner

    from crsbench.cli import app

    _, out = store
    boards = {}
    for jobs in ("1", "2"):
        args = ["score", "--store", str(out), "--out", str(tmp_path / jobs), "--replicates",
                "300", "--seed", "3", "--jobs", jobs]  # fmt: skip
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 0, res.output
        boards[jobs] = pd.read_csv(tmp_path / jobs / "leaderboard.csv")
    assert boards["1"]["tier"].notna().all()
    pd.testing.assert_frame_equal(boards["1"], boards["2"], check_exact=True)
    bad = CliRunner().invoke(app, ["score", "--store", str(out), "--jobs", "0"])
    assert bad.exit_code == 2 and "--jobs" in bad.output


def test_seed_only_by_name_and_wider_test_set_intervals(store):
    _, out = store
    per_seed = axes_from_runs(load_runs(out))
    seed_only = crs_uncertainty(per_seed, store=out, interval="seed-only", n_replicates=300)
    patients = crs_uncertainty(per_seed, store=out, n_replicates=300)
    assert seed_only.method == "seed-only" and seed_only.n_patients == {}
    width = {u.method: (u.result.ranks["crs_ci_high"] - u.result.ranks["crs_ci_low"]).mean()
             for u in (seed_only, patients)}  # fmt: skip
    assert width[TEST_PATIENTS_X_SEEDS] > 3 * width["seed-only"]


def test_export_and_repair_restore_the_predictions(store, tmp_path):
    _, out = store
    copy = tmp_path / "copy"
    shutil.copytree(out / "export", copy / "export")
    (copy / "results.duckdb").write_bytes(b"not a database")
    report = repair_store(copy)
    assert report.n_predictions == len(_query(out, "SELECT * FROM predictions"))
    for table in ("eval_splits", "prediction_blobs", "predictions"):
        a = _query(out, f"SELECT * FROM {table} ORDER BY ALL")
        b = _query(copy, f"SELECT * FROM {table} ORDER BY ALL")
        pd.testing.assert_frame_equal(a.astype(str), b.astype(str), check_dtype=False)


def test_report_names_the_method_and_the_patients(store, tmp_path):
    from crsbench.cli.report_command import write_report

    _, out = store
    html = write_report(out, tmp_path / "report", n_replicates=200).read_text(encoding="utf-8")
    assert "test patients × seeds bootstrap, 200 replicates" in html
    assert "Test patients per dataset: chexpert" in html
    # the method is named beside the intervals, in the leaderboard's interval column
    assert "CRS 95% CI (test patients × seeds)" in html
    assert "seed-only bootstrap because" not in html


def test_subgroup_metadata_and_prediction_analyses(store, tmp_path):
    from crsbench.stats.analysis_registry import AnalysisInputs, evaluate
    from crsbench.stats.analyze import write_analyses
    from crsbench.stats.analyze_predictions import PREDICTION_ANALYSES
    from crsbench.stats.store_predictions import load_store_predictions

    cfg, out = store
    meta = _query(out, "SELECT s.dataset, s.split, m.attribute, m.vals, s.image_ids FROM "
                  "split_metadata m JOIN eval_splits s USING (split_key)")  # fmt: skip
    prepared = prepare_datasets(cfg)
    isic = meta[(meta.dataset == "isic2019") & (meta.split == "test")]
    assert {"sex", "age", "site"} <= set(isic["attribute"])
    p = prepared["isic2019"]
    site = isic[isic.attribute == "site"].iloc[0]
    want = p.dataset.metadata["site"].fillna("").str.lower().to_numpy()[p.splits.test]
    assert list(site["vals"]) == [str(v) for v in want]
    runs = load_runs(out)
    per_seed = axes_from_runs(runs)
    keys = sorted(set(zip(per_seed.encoder, per_seed.dataset, strict=True)))
    found = load_store_predictions(out, keys, sorted(per_seed.seed.unique()))
    assert all(c.val is not None for c in found.cells.values())
    from crsbench.scoring.anchors import load_anchors
    from crsbench.store.computed import ComputedTables

    cells = score_cells(per_seed)
    inputs = AnalysisInputs(runs=runs, cells=cells, board=cells, per_seed=per_seed,
                            anchors=load_anchors(), plan=None, store=out, groups=None,
                            n_replicates=5, seed=0, interval="test-patients")  # fmt: skip
    done = evaluate(PREDICTION_ANALYSES, inputs, {"analyses": {}, "skipped": {}})
    write_analyses(ComputedTables(done, {}), tmp_path)
    flips = done["prediction_flips"]
    assert not flips.empty and flips["flip_share"].between(0, 1).all()
    sub = pd.read_csv(tmp_path / "subgroup_cells.csv")
    # the tiny test sets are below the 30-patient minimum: too small, never a number, and no
    # worst-subgroup CRS (the toy store of tests/unit/stats checks the numbers)
    small = sub["status"] == "too small"
    assert small.any() and sub.loc[small, "auroc"].isna().all()
    crs_written = (tmp_path / "subgroup_crs.csv").is_file()
    assert crs_written == (sub["status"] == "ok").any()
    assert (tmp_path / "operating_point_transfer.csv").is_file()
    ops = pd.read_csv(tmp_path / "operating_point_transfer.csv")
    assert not ops["label"].astype(str).str.fullmatch(r"\d+").any()  # names, not indices


def test_the_pipeline_records_each_encoders_group_and_each_datasets_labels(store):
    from crsbench.datasets import DATASETS
    from crsbench.encoders import get_card
    from crsbench.store import load_runs, read_card_facts

    _, out = store
    facts = read_card_facts(out)
    runs = load_runs(out)
    assert facts is not None
    assert facts.encoder_groups == {e: get_card(e).family_group for e in runs["encoder"].unique()}
    for name in runs["dataset"].unique():
        assert facts.label_names[name] == tuple(DATASETS.get(name).card.label_names)
    assert runs["encoder_group"].notna().all()


def test_verdict_intervals_come_from_the_test_set_bootstrap(store, tmp_path):
    from crsbench.stats import run_analyses

    _, out = store
    run_analyses(load_runs(out), tmp_path / "analysis", n_replicates=200, store=out)
    verdict = pd.read_csv(tmp_path / "analysis" / "at_a_glance.csv")
    axes = verdict[verdict["question"].isin(
        ["pick", "discrimination", "calibration", "label_efficiency", "robustness"])]  # fmt: skip
    assert not axes.empty and set(axes["interval"]) == {TEST_PATIENTS_X_SEEDS}
    # at full labels D is the same fit in every seed: only the test-set resampling widens it
    d = axes[axes["question"] == "discrimination"]
    assert ((d["ci_high"] - d["ci_low"]) > 1e-3).all(), d
    # JPEG and calibration under shift: on the same test-set resamples, not the seeds only
    others = verdict[~verdict.index.isin(axes.index)]
    assert set(others["question"]) == {"jpeg", "shift_calibration"}
    assert set(others["interval"]) == {TEST_PATIENTS_X_SEEDS}
    assert ((others["ci_high"] - others["ci_low"]) > 1e-4).all(), others
    assert set(others.loc[others["question"] == "shift_calibration", "dataset"]) == {
        "chexpert→mimic_cxr"
    }


def test_verdict_jpeg_and_shift_values_are_the_stored_runs(store):
    """The bootstrap's point values of the two questions are the runs' own (clean minus JPEG
    AUROC, shift minus clean ECE, averaged over severities and seeds)."""
    from crsbench.scoring import axes_from_runs
    from crsbench.stats.at_a_glance import (
        at_a_glance_table,
        axis_replicates_of,
        seed_axis_replicates,
    )
    from crsbench.stats.uncertainty import crs_uncertainty

    _, out = store
    runs = load_runs(out)
    per_seed = axes_from_runs(runs)
    unc = crs_uncertainty(per_seed, store=out, n_replicates=50)
    new = at_a_glance_table(runs, axis_replicates_of(unc))
    old = at_a_glance_table(runs, seed_axis_replicates(per_seed, 50))  # from the runs table
    keep = ["jpeg", "shift_calibration"]
    a = new[new["question"].isin(keep)].set_index(["dataset", "question"]).sort_index()
    b = old[old["question"].isin(keep)].set_index(["dataset", "question"]).sort_index()
    assert len(a) == len(b) > 0
    assert (a["leader"] == b["leader"]).all()
    np.testing.assert_allclose(a["value"], b["value"], rtol=0, atol=1e-7)
    np.testing.assert_allclose(a["runner_up_value"], b["runner_up_value"], rtol=0, atol=1e-7)
