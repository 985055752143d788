"""Per-target shift analyses on a planted store: drop per encoder and target, Welch test per
target, external validity leave-one-target-out, and what `crsbench analyze` writes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from crsbench.scoring import axes_from_runs, score_cells
from crsbench.scoring.aggregate import encoder_means
from crsbench.stats import (
    leave_one_target_out,
    shift_auroc_by_encoder,
    shift_validity,
    shift_welch,
    shift_welch_by_target,
)
from crsbench.stats.shift import shift_drop_matrix
from crsbench.store import load_runs
from crsbench.testing import simulate_runs, write_store
from crsbench.testing.simulated_store import EXTRA_SHIFT_REFERENCE_GAP, GENERAL

pytestmark = pytest.mark.filterwarnings("ignore:cells not scored:UserWarning")
TARGETS = ("nih_cxr14", "padchest")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    store = tmp_path_factory.mktemp("shift_targets") / "store"
    df = simulate_runs(n_encoders=8, datasets=("isic2019", "chexpert"), seeds=2, rng_seed=3,
                       extra_shift_targets=TARGETS)  # fmt: skip
    write_store(df, store)
    return load_runs(store)


def test_drop_per_encoder_and_target_uses_the_planted_reference(runs: pd.DataFrame) -> None:
    shift = shift_auroc_by_encoder(runs).set_index(["encoder", "eval_dataset"])
    assert set(shift.index.get_level_values(1)) == {"mimic_cxr", *TARGETS}
    main = runs[(runs["probe"] == "logistic") & (runs["layer"] == 1.0)
                & (runs["recalibrator"] == "none") & (runs["fraction"] == 1.0)
                & (runs["dataset"] == "chexpert")]  # fmt: skip
    clean = main[main["condition"] == "clean"].groupby("encoder")["auroc"].mean()
    mimic = main[main["eval_dataset"] == "mimic_cxr"].groupby("encoder")["auroc"].mean()
    for enc in clean.index:
        m = shift.loc[(enc, "mimic_cxr")]
        assert m["source_auroc"] == pytest.approx(clean[enc], abs=1e-12)
        assert m["compared_labels"] == "all" and m["n_seeds"] == 2
        for k, target in enumerate(TARGETS):
            row = shift.loc[(enc, target)]
            # planted: reference = clean + gap, drop = MIMIC's drop + 0.03 (k + 1)
            assert row["source_auroc"] == pytest.approx(clean[enc] + EXTRA_SHIFT_REFERENCE_GAP)
            want = clean[enc] - mimic[enc] + 0.03 * (k + 1)
            assert row["shift_drop"] == pytest.approx(want, abs=1e-12)
            assert len(row["compared_labels"].split("; ")) == 11
    wide = shift_drop_matrix(shift_auroc_by_encoder(runs))
    assert list(wide.columns) == [f"chexpert→{t}" for t in ("mimic_cxr", *TARGETS)]
    assert wide.shape[0] == 8


def test_welch_per_target_equals_the_single_target_test(runs: pd.DataFrame) -> None:
    shift = shift_auroc_by_encoder(runs)
    groups = {e: "general" if e in GENERAL else "medical" for e in shift["encoder"].unique()}
    table = shift_welch_by_target(shift, groups).set_index("target")
    assert list(table.index) == ["mimic_cxr", *TARGETS]
    for target in table.index:
        part = shift[shift["eval_dataset"] == target]
        one = shift_welch(dict(zip(part["encoder"], part["shift_auroc"], strict=True)), groups)
        med = part.loc[part["encoder"].map(groups) == "medical", "shift_auroc"]
        gen = part.loc[part["encoder"].map(groups) == "general", "shift_auroc"]
        ref = sps.ttest_ind(med, gen, equal_var=False)
        assert table.loc[target, "t"] == pytest.approx(float(ref.statistic))
        assert table.loc[target, "p_value"] == pytest.approx(one.iloc[0]["p_value"])


def test_leave_one_target_out_scores_each_target_without_itself(runs: pd.DataFrame) -> None:
    loto = leave_one_target_out(runs).set_index("target")
    assert list(loto.index) == ["mimic_cxr", *TARGETS] and (loto["source"] == "chexpert").all()
    shift = shift_auroc_by_encoder(runs)
    for target in loto.index:
        kept = [t for t in ("mimic_cxr", *TARGETS) if t != target]
        cells = score_cells(axes_from_runs(runs, include_shift=kept, robustness="all_shifts"))
        crs = encoder_means(cells, "CRS")
        held = shift[shift["eval_dataset"] == target].set_index("encoder")["shift_auroc"]
        common = sorted(set(crs) & set(held.index))
        ref = sps.spearmanr([crs[e] for e in common], held[common]).statistic
        assert loto.loc[target, "n"] == len(common) == 8
        assert loto.loc[target, "crs_spearman"] == pytest.approx(ref, abs=1e-12)
        assert loto.loc[target, "held_out_winner"] == held[common].idxmax()


def test_the_held_out_targets_rows_never_reach_its_own_predictor(runs: pd.DataFrame) -> None:
    """Moving every AUROC on NIH leaves the CRS without NIH unchanged, and moves the CRS
    without PadChest (which counts NIH in R)."""
    nih = (runs["condition"] == "shift") & (runs["eval_dataset"] == "nih_cxr14")
    moved = runs.copy()
    moved.loc[nih, "auroc"] -= np.random.default_rng(0).uniform(0.05, 0.2, int(nih.sum()))

    def crs(frame: pd.DataFrame, kept: list[str]) -> np.ndarray:
        axes = axes_from_runs(frame, include_shift=kept, robustness="all_shifts")
        return score_cells(axes)["CRS"].to_numpy()

    assert np.array_equal(crs(runs, ["mimic_cxr", "padchest"]),
                          crs(moved, ["mimic_cxr", "padchest"]))  # fmt: skip
    assert not np.allclose(crs(runs, ["mimic_cxr", "nih_cxr14"]),
                           crs(moved, ["mimic_cxr", "nih_cxr14"]))  # fmt: skip


def test_one_target_reduces_to_the_papers_external_validity(tmp_path: Path) -> None:
    write_store(simulate_runs(n_encoders=8, datasets=("isic2019", "chexpert"), seeds=2,
                              rng_seed=3), tmp_path / "store")  # fmt: skip
    runs = load_runs(tmp_path / "store")
    loto = leave_one_target_out(runs).iloc[0]
    paper = shift_validity(runs).set_index("predictor")
    assert loto["crs_spearman"] == pytest.approx(
        paper.loc["crs_aggregate_without_shift", "spearman_rho"], abs=1e-12
    )
    assert loto["crs_source_spearman"] == pytest.approx(
        paper.loc["crs_source_cell_without_shift", "spearman_rho"], abs=1e-12
    )


def test_analyze_writes_the_per_target_tables(runs: pd.DataFrame, tmp_path: Path) -> None:
    from crsbench.stats.analyze import run_analyses

    summary = run_analyses(runs, tmp_path, n_replicates=20)
    drop = pd.read_csv(tmp_path / "shift_drop.csv", index_col="encoder")
    assert list(drop.columns) == [f"chexpert→{t}" for t in ("mimic_cxr", *TARGETS)]
    welch = pd.read_csv(tmp_path / "shift_welch.csv")
    assert list(welch["target"]) == ["mimic_cxr", *TARGETS]
    loto = pd.read_csv(tmp_path / "leave_one_target_out.csv")
    assert list(loto["target"]) == ["mimic_cxr", *TARGETS]
    assert set(summary["analyses"]["shift_welch"]) == {
        f"chexpert->{t}" for t in ("mimic_cxr", *TARGETS)
    }
    assert "leave_one_target_out" in summary["analyses"]


def test_the_welch_test_leaves_baseline_encoders_out_of_general():
    """Hand-worked: medical 0.70, 0.75, 0.72; general 0.50, 0.55, 0.60; two baselines (group
    ``baseline`` on their cards) at 0.30 and 0.35 are in neither group."""
    from crsbench.stats.shift import default_groups, shift_welch_by_target
    from crsbench.store.cards import ENCODER_GROUP_COLUMN

    values = {"m1": 0.70, "m2": 0.75, "m3": 0.72, "g1": 0.50, "g2": 0.55, "g3": 0.60,
              "pixel": 0.30, "random_cnn": 0.35}  # fmt: skip
    cards = {**dict.fromkeys(("m1", "m2"), "medical"), "m3": "specialist",
             **dict.fromkeys(("g1", "g2", "g3"), "general"),
             **dict.fromkeys(("pixel", "random_cnn"), "baseline")}  # fmt: skip
    shift = pd.DataFrame({"encoder": list(values), "dataset": "chexpert",
                          "eval_dataset": "mimic_cxr", "shift_auroc": list(values.values())})  # fmt: skip
    # the card groups as crsbench.store.load_runs attaches them to the runs
    runs = pd.DataFrame({"encoder": list(cards), ENCODER_GROUP_COLUMN: list(cards.values())})
    groups = default_groups(list(values), runs)
    assert groups["pixel"] == groups["random_cnn"] == "baseline" and groups["m3"] == "medical"
    row = shift_welch_by_target(shift, groups).iloc[0]
    ref = sps.ttest_ind([0.70, 0.75, 0.72], [0.50, 0.55, 0.60], equal_var=False)
    assert row["n_general"] == 3 and row["mean_general"] == pytest.approx(0.55)
    assert row["n_medical"] == 3 and row["mean_medical"] == pytest.approx(2.17 / 3)
    assert row["t"] == pytest.approx(ref.statistic) and row["p_value"] == pytest.approx(ref.pvalue)
