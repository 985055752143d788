"""Several shift targets of one source through the real runner: planned = stored, one shift
row per target for every probe and recalibrator, labels compared like with like, and the axes,
the all-shifts variant and leave-one-target-out computed from the store."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from crsbench.config import config_hash, parse_config
from crsbench.runs.pipeline import RunOptions, run_benchmark
from crsbench.runs.plan import plan_cells

from .runner_fixtures import TINY_SIZES, tiny_config_dict

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::UserWarning")]
TARGETS = {"mimic_cxr": "official_test", "nih_cxr14": "official_test", "padchest": "all_frontal"}
NIH_NOT_PROVIDED = ["Enlarged Cardiomediastinum", "Fracture", "Support Devices"]


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory):
    from crsbench.datasets.synthetic import write_all

    root = tmp_path_factory.mktemp("shift_targets")
    write_all(root / "data", size=TINY_SIZES, seed=0, names=("chexpert", *TARGETS))
    raw = tiny_config_dict(root / "data", root / "out")
    raw["datasets"] = {n: {"root": str(root / "data" / n)} for n in ("chexpert", *TARGETS)}
    raw["shifts"] = [{"source": "chexpert", "target": t, "rows": r} for t, r in TARGETS.items()]
    raw["layers"], raw["recalibrators"] = [1.0], ["temperature"]
    cfg = parse_config(raw, base_dir=root)
    run_benchmark(cfg, RunOptions(progress=False))
    with duckdb.connect(str(Path(cfg.output_dir) / "results.duckdb"), read_only=True) as con:
        runs = con.execute("SELECT * FROM runs").df()
        preds = con.execute(
            "SELECT p.run_key, s.dataset, s.split, s.n_rows FROM predictions p "
            "JOIN eval_splits s USING (split_key)"
        ).df()
    return cfg, runs, preds


def test_each_targets_predictions_are_kept_on_its_own_rows(finished) -> None:
    _, runs, preds = finished
    main = runs[(runs["condition"] == "shift") & (runs["probe"] == "logistic")
                & (runs["recalibrator"] == "none")]  # fmt: skip
    got = preds.merge(main[["run_key", "eval_dataset", "details"]], on="run_key")
    assert len(got) == len(main) == 3 * 2  # three targets, two seeds
    assert (got["dataset"] == got["eval_dataset"]).all() and (got["split"] == "shift").all()
    for n, text in zip(got["n_rows"], got["details"], strict=True):
        assert n == json.loads(text)["shift_rows"]["n_images"]


def test_every_target_is_planned_and_stored(finished) -> None:
    cfg, runs, _ = finished
    (plan,) = plan_cells(cfg, {"chexpert": "chest_xray"})
    assert plan.shift_targets == tuple(TARGETS) and plan.n_extractions == 1 + 15 + 3
    assert set(runs["run_key"]) == {i.key(config_hash(cfg)) for i in plan.identities}
    shift = runs[runs["condition"] == "shift"]
    # per seed and target: logistic, logistic + temperature, knn, mlp
    for target in TARGETS:
        rows = shift[shift["eval_dataset"] == target]
        got = sorted(zip(rows["seed"], rows["probe"], rows["recalibrator"], strict=True))
        assert got == sorted((s, p, r) for s in (0, 1) for p, r in (
            ("logistic", "none"), ("logistic", "temperature"), ("knn", "none"),
            ("mlp", "none")))  # fmt: skip
        for text in rows["details"]:
            assert json.loads(text)["shift_rows"]["rows"] == TARGETS[target]


def test_labels_are_compared_like_with_like(finished) -> None:
    _, runs, _ = finished
    shift = runs[runs["condition"] == "shift"]
    details = shift["details"].map(json.loads)
    for target, det in zip(shift["eval_dataset"], details, strict=True):
        if target != "nih_cxr14":  # MIMIC-CXR and PadChest provide all 14 labels
            assert "shift_labels" not in det
            continue
        entry = det["shift_labels"]
        assert entry["not_compared"] == NIH_NOT_PROVIDED and len(entry["compared"]) == 11
        if det.get("recal_choice") == "undefined":  # calibration split too small: no metric
            assert entry["source_clean_auroc"] is None and "undefined" in entry
            continue
        # the three labels NIH cannot give (columns 1, 12, 13) are never scored on the target
        assert {"1", "12", "13"} <= set(det["excluded"])
        assert 0.0 <= entry["source_clean_auroc"] <= 1.0


def test_axes_variant_and_leave_one_target_out_from_the_store(finished) -> None:
    from crsbench.scoring import axes_from_runs
    from crsbench.stats import leave_one_target_out, shift_auroc_by_encoder
    from crsbench.store import load_runs

    cfg, _, _ = finished
    runs = load_runs(cfg.output_dir)
    axes = axes_from_runs(runs)
    assert (axes["n_conditions"] == 16).all() and (axes["n_extra_conditions"] == 2).all()
    assert axes[["robustness_drop", "robustness_drop_all_shifts"]].notna().all().all()
    shift = shift_auroc_by_encoder(runs).set_index("eval_dataset")
    nih = runs[(runs["eval_dataset"] == "nih_cxr14") & (runs["probe"] == "logistic")
               & (runs["recalibrator"] == "none")]  # fmt: skip
    refs = nih["details"].map(lambda t: json.loads(t)["shift_labels"]["source_clean_auroc"])
    assert shift.loc["nih_cxr14", "source_auroc"] == pytest.approx(refs.mean())
    assert shift.loc["nih_cxr14", "shift_drop"] == pytest.approx(refs.mean() - nih["auroc"].mean())
    loto = leave_one_target_out(runs)
    assert list(loto["target"]) == sorted(TARGETS) and (loto["n"] == 1).all()
    pd.testing.assert_series_equal(
        loto["source"], pd.Series(["chexpert"] * 3, name="source"), check_index=False
    )


def test_shift_ece_increase_compares_the_same_labels(finished) -> None:
    """NIH provides 11 of the 14 labels: its ECE increase is measured from the source's clean
    ECE on those 11 (recorded in the row's details), in the runs-based verdict and in the
    test-set bootstrap's alike."""
    import numpy as np

    from crsbench.scoring import axes_from_runs
    from crsbench.stats.at_a_glance import (
        at_a_glance_table,
        axis_replicates_of,
        seed_axis_replicates,
    )
    from crsbench.stats.uncertainty import crs_uncertainty
    from crsbench.store import load_runs

    cfg, _, _ = finished
    runs = load_runs(cfg.output_dir)
    main = runs[(runs["probe"] == "logistic") & (runs["recalibrator"] == "none")
                & (runs["layer"] == 1.0) & (runs["fraction"] == 1.0)]  # fmt: skip
    nih = main[main["eval_dataset"] == "nih_cxr14"].sort_values("seed")
    clean = main[main["condition"] == "clean"].sort_values("seed")
    ref = nih["details"].map(lambda t: json.loads(t)["shift_labels"]["source_clean_ece"])
    assert ref.notna().all()
    assert not np.allclose(ref.to_numpy(float), clean["ece"].to_numpy(float))  # not all 14
    expected = float(np.mean(nih["ece"].to_numpy(float) - ref.to_numpy(float)))
    per_seed = axes_from_runs(runs)
    unc = crs_uncertainty(per_seed, store=cfg.output_dir, n_replicates=50)
    verdicts = {
        "test-set": at_a_glance_table(runs, axis_replicates_of(unc)),
        "seed-only": at_a_glance_table(runs, seed_axis_replicates(per_seed, 50)),
    }
    for name, table in verdicts.items():
        row = table[(table["question"] == "shift_calibration")
                    & (table["dataset"] == "chexpert→nih_cxr14")]  # fmt: skip
        assert row["value"].iloc[0] == pytest.approx(expected, abs=1e-7), name
