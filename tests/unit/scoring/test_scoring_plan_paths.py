"""Every scoring path holds the cells to the recorded plan, not to what the store holds.

One test per path (``score_runs``, the LoRA regime comparison, the validity analyses, the
control probes, the anchors freeze, the report's at-a-glance table) on a real results store written with
the planner's plan (:func:`crsbench.runs.plan.recorded_plan`), in which no cell evaluated a
planned shift target or one encoder's planned cell was not run. Each asserts the NaN and its
reason under the plan, and what the store alone would have (silently) scored.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from crsbench.cli.report_command import report_data
from crsbench.config import parse_config
from crsbench.report.beyond_data import BeyondData, _add_at_a_glance
from crsbench.runs.plan import recorded_plan
from crsbench.scoring import freeze_anchors, score_runs
from crsbench.stats import (
    control_probe_agreement,
    leave_one_target_out,
    regime_comparison,
    shift_validity,
)
from crsbench.store import load_runs, read_plan
from crsbench.store.stored_plan import StoredPlan
from crsbench.testing import simulate_runs, write_store

pytestmark = pytest.mark.filterwarnings(
    "ignore:cells not scored:UserWarning", "ignore:encoders .* are left out:UserWarning"
)

MODALITIES = {"isic2019": "dermoscopy", "chexpert": "chest_xray", "mimic_cxr": "chest_xray",
              "nih_cxr14": "chest_xray"}  # fmt: skip
MIMIC_MISSING = "R: shift shift:mimic_cxr missing"


def _plan(tmp_path: Path, df: pd.DataFrame, targets: tuple[str, ...] = ("mimic_cxr",)):
    """The planner's record of the config behind ``df`` (CheXpert → ``targets``)."""
    datasets = sorted(df["dataset"].unique())
    cfg = parse_config(
        {
            "encoders": sorted(df["encoder"].unique()),
            "datasets": {n: {"root": f"d/{n}"} for n in (*datasets, *targets)},
            "shifts": [{"source": "chexpert", "target": t} for t in targets],
            "seeds": sorted(int(s) for s in df.loc[df["regime"] == "frozen", "seed"].unique()),
            "perturbations": {"include_extra": False},
        },
        base_dir=tmp_path,
    )
    return recorded_plan(cfg, MODALITIES)


def _store(df: pd.DataFrame, tmp_path: Path, plan: StoredPlan | None, name: str = "store"):
    store = tmp_path / name
    write_store(df, store, plan=plan)
    return load_runs(store), store


def _without_mimic(df: pd.DataFrame, regime: str = "frozen") -> pd.DataFrame:
    return df[~((df["eval_dataset"] == "mimic_cxr") & (df["regime"] == regime))]


def test_score_runs_holds_chexpert_to_the_planned_mimic_shift(tmp_path: Path) -> None:
    df = simulate_runs(n_encoders=3, datasets=("isic2019", "chexpert"), seeds=2, rng_seed=0)
    runs, store = _store(_without_mimic(df), tmp_path, _plan(tmp_path, df))
    for plan in (store, _plan(tmp_path, df)):  # the store, or the plan itself
        cells = score_runs(runs, plan=plan).set_index(["encoder", "dataset"])
        chex = cells.xs("chexpert", level="dataset")
        assert chex["CRS"].isna().all() and chex["robustness_drop"].isna().all()
        assert chex["missing"].str.contains(MIMIC_MISSING).all()
        assert cells.xs("isic2019", level="dataset")["CRS"].notna().all()
    blind = score_runs(runs)  # what the store holds alone: R over the 15 conditions
    assert blind["CRS"].notna().all() and (blind["missing"] == "").all()


def test_the_lora_regime_is_held_to_its_planned_cells(tmp_path: Path) -> None:
    df = simulate_runs(n_encoders=3, datasets=("isic2019", "chexpert"), seeds=2, rng_seed=1,
                       regimes=("frozen", "lora"))  # fmt: skip
    frozen = _plan(tmp_path, df)
    lora = [replace(c, regime="lora") for c in frozen]  # LoRA seeds 0, 1 as the frozen ones
    plan = StoredPlan.ordered((*frozen, *lora))
    runs, store = _store(_without_mimic(df, "lora"), tmp_path, plan)
    assert read_plan(store) == plan  # both regimes' cells round-trip through table 'plan'
    assert plan.of_regime("lora") is not None and len(plan.of_regime("lora").cells) == 6
    row = regime_comparison(runs, plan=plan).set_index("scope").loc["all"]
    assert row["n"] == 0 and np.isnan(row["kendall_tau"])
    for enc in sorted(df["encoder"].unique()):
        assert f"{enc} (lora): chexpert: {MIMIC_MISSING}" in row["note"]
    assert "(frozen)" not in row["note"]  # the frozen regime has its MIMIC rows
    blind = regime_comparison(runs).set_index("scope").loc["all"]
    assert blind["n"] == 3 and blind["note"] == ""


def test_validity_drops_the_encoder_with_an_unrun_planned_cell(tmp_path: Path) -> None:
    df = simulate_runs(n_encoders=5, datasets=("isic2019", "chexpert"), seeds=2, rng_seed=2)
    victim = sorted(df["encoder"].unique())[0]
    kept = df[~((df["encoder"] == victim) & (df["dataset"] == "isic2019"))]
    plan = _plan(tmp_path, df)
    runs, _store_dir = _store(kept, tmp_path, plan)
    got = shift_validity(runs, plan=plan).set_index("predictor")
    assert got.loc["crs_aggregate_without_shift", "n"] == 4  # the victim has no aggregate
    assert got.loc["source_auroc", "n"] == 5  # its CheXpert → MIMIC row is there
    blind = shift_validity(runs).set_index("predictor")
    assert blind.loc["crs_aggregate_without_shift", "n"] == 5
    loto = leave_one_target_out(runs, plan=plan).iloc[0]
    assert loto["n"] == 4 and leave_one_target_out(runs).iloc[0]["n"] == 5


def test_leave_one_target_out_keeps_a_planned_target_no_cell_evaluated(tmp_path: Path) -> None:
    df = simulate_runs(n_encoders=4, datasets=("chexpert",), seeds=2, rng_seed=3)
    plan = _plan(tmp_path, df, targets=("mimic_cxr", "nih_cxr14"))  # NIH never evaluated
    runs, _store_dir = _store(df, tmp_path, plan)
    row = leave_one_target_out(runs, plan=plan).iloc[0]
    # without MIMIC, R counts the other planned target, NIH, which is missing: no CRS
    assert row["target"] == "mimic_cxr" and row["n"] == 0 and np.isnan(row["crs_spearman"])
    blind = leave_one_target_out(runs).iloc[0]
    assert blind["n"] == 4 and np.isfinite(blind["crs_spearman"])


def _with_full_mlp(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` whose MLP probe has every main-protocol row (the logistic's, AUROC shifted)."""
    main = (df["probe"] == "logistic") & (df["layer"] == 1.0) & (df["recalibrator"] == "none")
    mlp = df[main & (df["regime"] == "frozen")].copy()
    mlp["probe"] = "mlp"
    mlp["auroc"] = mlp["auroc"] - 0.01 * (mlp["encoder"].astype("category").cat.codes)
    return pd.concat([df[df["probe"] == "logistic"], mlp], ignore_index=True)


def test_control_probes_hold_both_probes_to_the_planned_mimic_shift(tmp_path: Path) -> None:
    df = _with_full_mlp(simulate_runs(n_encoders=4, datasets=("isic2019", "chexpert"),
                                      seeds=2, rng_seed=4))  # fmt: skip
    plan = _plan(tmp_path, df)
    runs, _store_dir = _store(_without_mimic(df), tmp_path, plan)
    table, _cov = control_probe_agreement(runs, plan=plan)
    rows = table.set_index(["dataset", "ranking"])
    assert np.isnan(rows.loc[("chexpert", "crs"), "kendall_tau"])
    assert rows.loc[("chexpert", "crs"), "n_cells"] == 0
    assert rows.loc[("isic2019", "crs"), "n_cells"] == 4
    assert rows.loc[("chexpert", "auroc"), "n_cells"] == 4  # AUROC needs no shift
    blind = control_probe_agreement(runs)[0].set_index(["dataset", "ranking"])
    assert blind.loc[("chexpert", "crs"), "n_cells"] == 4


def test_freezing_anchors_leaves_cells_missing_a_planned_shift_out_of_the_panel(
    tmp_path: Path,
) -> None:
    df = simulate_runs(n_encoders=3, datasets=("isic2019", "chexpert"), seeds=2, rng_seed=5)
    _runs, store = _store(_without_mimic(df), tmp_path, _plan(tmp_path, df))
    frozen = freeze_anchors(store, tmp_path / "a.yaml", version="test")
    assert frozen.panel_by_dataset["chexpert"].shape == (0, 4)
    assert frozen.panel_by_dataset["isic2019"].shape == (3, 4)
    _runs, old = _store(_without_mimic(df), tmp_path, None, name="old")  # no plan recorded
    blind = freeze_anchors(old, tmp_path / "b.yaml", version="test")
    assert blind.panel_by_dataset["chexpert"].shape == (3, 4)


def test_the_reports_at_a_glance_scores_chexpert_against_the_plan(tmp_path: Path) -> None:
    df = simulate_runs(n_encoders=3, datasets=("isic2019", "chexpert"), seeds=2, rng_seed=6)
    _runs, store = _store(_without_mimic(df), tmp_path, _plan(tmp_path, df))
    data = report_data(store, n_replicates=20, interval="seed-only")
    assert data.plan_notes == []  # the store records its plan
    out = BeyondData()
    _add_at_a_glance(data, out)
    asked = set(zip(out.at_a_glance["dataset"], out.at_a_glance["question"], strict=True))
    # no CheXpert cell is complete (R lacks MIMIC): no axis or CRS question of CheXpert;
    # the report lists its encoders as incomplete, with the reason
    axis_questions = {"pick", "discrimination", "calibration", "label_efficiency", "robustness"}
    assert not {q for ds, q in asked if ds == "chexpert"} & axis_questions
    assert {q for ds, q in asked if ds == "isic2019"} >= axis_questions
    assert any("chexpert: " + MIMIC_MISSING in s for s in data.cells_left_out)
    # what the store holds alone (no plan): a CheXpert CRS leader
    from crsbench.scoring.anchors import anchors_for_runs
    from crsbench.scoring.planned import planned_axes
    from crsbench.stats.at_a_glance import at_a_glance_table, seed_axis_replicates

    reps = seed_axis_replicates(planned_axes(data.runs, None), n_replicates=20, seed=0)
    blind = at_a_glance_table(data.runs, reps, anchors_for_runs(None, data.runs), seed=0)
    assert ("chexpert", "pick") in set(zip(blind["dataset"], blind["question"], strict=True))


def test_a_store_without_a_plan_says_so_in_score_and_report(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from crsbench.cli import app
    from crsbench.cli.analysis_commands import interval_lines
    from crsbench.stats.leaderboard import build_leaderboard
    from crsbench.store.stored_plan import NO_PLAN_NOTE

    df = simulate_runs(n_encoders=2, datasets=("isic2019", "chexpert"), seeds=2, rng_seed=7)
    runs, old = _store(df, tmp_path, None, name="old")
    board = build_leaderboard(runs, n_replicates=0, store=old)
    assert board.attrs["plan_notes"] == [NO_PLAN_NOTE]
    assert f"NOTE: {NO_PLAN_NOTE}." in interval_lines(board.attrs, 0)
    shown = CliRunner().invoke(app, ["score", "--store", str(old), "--replicates", "0",
                                     "--out", str(tmp_path / "scores")])  # fmt: skip
    assert shown.exit_code == 0, shown.output
    assert "has no 'plan' table" in shown.stderr
    assert report_data(old, n_replicates=0).plan_notes == [NO_PLAN_NOTE]
    runs, new = _store(df, tmp_path, _plan(tmp_path, df), name="new")
    assert build_leaderboard(runs, n_replicates=0, store=new).attrs["plan_notes"] == []
    assert report_data(new, n_replicates=0).plan_notes == []
