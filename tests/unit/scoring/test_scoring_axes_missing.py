"""R holds exactly the 15 paper conditions (+ shift), extras beside it; no silent absorption.

Every test writes a real results store (``simulate_runs`` → edits → ``write_store``) and reads
it back through ``load_runs`` → ``axes_from_runs`` → ``score_cells`` → the leaderboard.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from crsbench.core.errors import ConfigError, DataError
from crsbench.protocol import PAPER_CONDITIONS, PAPER_PERTURBATIONS
from crsbench.scoring import (
    aggregate_by_encoder,
    axes_from_runs,
    load_anchors,
    score_cells,
    seed_means,
)
from crsbench.stats.bootstrap import axes_cube, paired_seed_bootstrap, replicate_scores
from crsbench.stats.leaderboard import build_leaderboard
from crsbench.store import load_runs
from crsbench.testing import simulate_runs, write_store

pytestmark = pytest.mark.filterwarnings("ignore:cells not scored:UserWarning")

CLEAN_AUC = 0.85
PAPER_DROP = 0.01
EXTRA_DROP = 0.25


def _store(df: pd.DataFrame, tmp_path: Path) -> pd.DataFrame:
    write_store(df, tmp_path / "store")
    return load_runs(tmp_path / "store")


def _main(df: pd.DataFrame) -> pd.Series:
    return (df["probe"] == "logistic") & (df["layer"] == 1.0) & (df["recalibrator"] == "none")


def _worked_runs(datasets: tuple[str, ...] = ("isic2019",)) -> pd.DataFrame:
    """Two encoders, 3 seeds; encoder 'resnet50' gets exact AUROCs: 0.85 clean, 0.84 on every
    paper condition, 0.60 on the 3 sensor-noise extras (drops 0.01 and 0.25)."""
    df = simulate_runs(n_encoders=2, datasets=datasets, seeds=3, rng_seed=1)
    enc = (df["encoder"] == "resnet50") & _main(df) & (df["fraction"] == 1.0)
    own = df["eval_dataset"] == df["dataset"]
    df.loc[enc & own & (df["condition"] == "clean"), "auroc"] = CLEAN_AUC
    df.loc[enc & own & df["condition"].isin(PAPER_PERTURBATIONS), "auroc"] = CLEAN_AUC - PAPER_DROP
    base = df[_main(df) & (df["fraction"] == 1.0) & (df["condition"] == "jpeg")]
    extras = []
    for sev in (1, 2, 3):
        rows = base[base["severity"] == sev].copy()
        rows["condition"] = "sensor_noise"
        rows.loc[rows["encoder"] == "resnet50", "auroc"] = CLEAN_AUC - EXTRA_DROP
        extras.append(rows)
    return pd.concat([df, *extras], ignore_index=True)


def test_r_holds_the_15_paper_conditions_and_extras_sit_beside(tmp_path):
    runs = _store(_worked_runs(), tmp_path)
    per_seed = axes_from_runs(runs)
    mine = per_seed[per_seed["encoder"] == "resnet50"]
    # R = 0.5·mean + 0.5·max over the 15 drops of 0.01 = 0.010 (not 0.150 with the extras)
    assert mine["robustness_drop"].to_numpy() == pytest.approx([0.010] * 3, abs=1e-12)
    # extras alone: every drop 0.25 → 0.25; with extras: mean (15·0.01 + 3·0.25)/18 = 0.05,
    # max 0.25 → 0.5·0.05 + 0.5·0.25 = 0.150
    assert mine["robustness_drop_extra"].to_numpy() == pytest.approx([0.25] * 3, abs=1e-12)
    assert mine["robustness_drop_with_extra"].to_numpy() == pytest.approx([0.150] * 3, abs=1e-12)
    assert (mine["n_conditions"] == 15).all() and (mine["n_extra_conditions"] == 3).all()
    assert (mine["missing"] == "").all()
    board = build_leaderboard(runs, n_replicates=0).set_index("encoder")
    assert board.loc["resnet50", "robustness_drop"] == pytest.approx(0.010, abs=1e-12)
    assert board.loc["resnet50", "robustness_drop_extra"] == pytest.approx(0.25, abs=1e-12)
    assert board.loc["resnet50", "missing"] == ""


def test_chexpert_r_adds_the_shift_drop_and_not_the_extras(tmp_path):
    df = _worked_runs(("chexpert",))
    shift = (df["encoder"] == "resnet50") & (df["condition"] == "shift") & _main(df)
    df.loc[shift, "auroc"] = CLEAN_AUC - 0.05
    per_seed = axes_from_runs(_store(df, tmp_path))
    r = per_seed.loc[per_seed["encoder"] == "resnet50", "robustness_drop"].to_numpy()
    # 16 conditions: mean (15·0.01 + 0.05)/16 = 0.0125, max 0.05 → 0.03125
    assert r == pytest.approx([0.03125] * 3, abs=1e-12)
    assert (per_seed["n_conditions"] == 16).all()


def test_missing_fraction_makes_l_nan_with_the_reason(tmp_path):
    df = simulate_runs(n_encoders=2, datasets=("isic2019",), seeds=3, rng_seed=1)
    gone = (df["encoder"] == "vit_b16") & (df["seed"] == 2) & (df["fraction"] == 0.05)
    runs = _store(df[~(gone & _main(df))], tmp_path)
    per_seed = axes_from_runs(runs)
    row = per_seed[(per_seed["encoder"] == "vit_b16") & (per_seed["seed"] == 2)].iloc[0]
    assert np.isnan(row["retention"]) and np.isnan(row["aulc"])
    assert row["missing"] == "L: fraction 0.05 missing"
    assert np.isfinite(row["auroc"]) and np.isfinite(row["robustness_drop"])
    cells = score_cells(per_seed).set_index("encoder")
    assert np.isnan(cells.loc["vit_b16", "retention"]) and np.isnan(cells.loc["vit_b16", "CRS"])
    assert cells.loc["vit_b16", "missing"] == "L: fraction 0.05 missing (seed 2)"
    assert cells.loc["vit_b16", "n_seeds"] == 2
    board = build_leaderboard(runs, n_replicates=0).set_index("encoder")
    assert np.isnan(board.loc["vit_b16", "CRS"]) and pd.isna(board.loc["vit_b16", "rank_crs"])
    assert board.loc["vit_b16", "missing"] == "isic2019: L: fraction 0.05 missing (seed 2)"
    assert board.loc["resnet50", "rank_crs"] == 1 and board.loc["resnet50", "missing"] == ""


def test_nan_seed_is_not_counted_and_the_axis_is_nan(tmp_path):
    df = simulate_runs(n_encoders=2, datasets=("isic2019",), seeds=3, rng_seed=1)
    clean = (df["encoder"] == "vit_b16") & (df["seed"] == 1) & _main(df)
    clean &= (df["fraction"] == 1.0) & (df["condition"] == "clean")
    df.loc[clean, "auroc"] = np.nan
    df.loc[clean, "details"] = '{"undefined":{"auroc":"every label excluded"}}'
    cells = score_cells(axes_from_runs(_store(df, tmp_path))).set_index("encoder")
    assert cells.loc["vit_b16", "n_seeds"] == 2 and cells.loc["resnet50", "n_seeds"] == 3
    # the documented rule: a cell's axis is NaN when any expected seed is NaN
    assert np.isnan(cells.loc["vit_b16", "auroc"]) and np.isnan(cells.loc["vit_b16", "CRS"])
    assert cells.loc["vit_b16", "missing"] == "D: clean AUROC NaN (seed 1)"


def test_missing_perturbation_row_makes_r_nan_with_the_reason(tmp_path):
    df = simulate_runs(n_encoders=2, datasets=("isic2019",), seeds=3, rng_seed=1)
    gone = (df["encoder"] == "vit_b16") & (df["seed"] == 0) & _main(df)
    gone &= (df["condition"] == "jpeg") & (df["severity"] == 3)
    cells = score_cells(axes_from_runs(_store(df[~gone], tmp_path))).set_index("encoder")
    assert np.isnan(cells.loc["vit_b16", "robustness_drop"])
    assert np.isfinite(cells.loc["vit_b16", "retention"])
    assert cells.loc["vit_b16", "missing"] == "R: condition jpeg/3 missing (seed 0)"


def test_absent_seed_and_duplicate_rows_are_loud(tmp_path):
    df = simulate_runs(n_encoders=2, datasets=("isic2019",), seeds=3, rng_seed=1)
    gone = (df["encoder"] == "vit_b16") & (df["seed"] == 2)
    cells = seed_means(axes_from_runs(_store(df[~gone], tmp_path))).set_index("encoder")
    assert np.isnan(cells.loc["vit_b16", "auroc"]) and cells.loc["vit_b16", "n_seeds"] == 2
    assert cells.loc["vit_b16", "missing"] == "no main-protocol rows (seed 2)"
    with pytest.raises(DataError, match="one main-protocol row per identity"):
        axes_from_runs(pd.concat([df, df.iloc[:1]], ignore_index=True))


def test_bootstrap_treats_seeds_and_cells_as_the_point_estimate(tmp_path):
    df = simulate_runs(n_encoders=3, datasets=("isic2019", "aptos2019"), seeds=3, rng_seed=2)
    gone = (df["encoder"] == "clip") & (df["seed"] == 1) & (df["fraction"] == 0.25)
    per_seed = axes_from_runs(_store(df[~(gone & _main(df))], tmp_path))
    board = aggregate_by_encoder(score_cells(per_seed)).set_index("encoder")
    boot = paired_seed_bootstrap(per_seed, n_replicates=200, seed=0)
    ranks = boot.ranks.set_index("encoder")
    assert np.isnan(board.loc["clip", "CRS"]) and np.isnan(ranks.loc["clip", "CRS"])
    assert pd.isna(ranks.loc["clip", "tier"]) and np.isnan(ranks.loc["clip", "p_rank1"])
    for enc in ("resnet50", "vit_b16"):
        assert ranks.loc[enc, "CRS"] == pytest.approx(board.loc[enc, "CRS"], abs=1e-12)
    # a replicate that never draws the NaN seed still leaves the cell (hence clip) NaN
    cube = axes_cube(per_seed)
    without_seed_1 = np.array([[2, 0, 1]])
    reps = replicate_scores(cube, without_seed_1, load_anchors())
    assert np.isnan(reps[0, cube.encoders.index("clip")])
    assert np.isfinite(reps[0, cube.encoders.index("vit_b16")])
    assert boot.ranks["p_rank1"].sum() == pytest.approx(1.0)


def test_paper_conditions_are_the_registry_kinds():
    from crsbench.perturb import PERTURBATIONS
    from crsbench.perturb.registry import register_perturbation

    assert len(PAPER_CONDITIONS) == 15
    for name in PERTURBATIONS.names():
        assert (PERTURBATIONS.get(name).kind == "paper") == (name in PAPER_PERTURBATIONS)
    with pytest.raises(ConfigError, match="kind='extra'"):
        register_perturbation("my_noise", parse=float, kind="paper", stochastic=True)


def test_calibration_analyses_keep_extras_beside_the_paper_conditions(tmp_path):
    from crsbench.stats import discrimination_calibration_correlation, ece_increase_by_condition

    df = simulate_runs(n_encoders=4, datasets=("isic2019",), seeds=2, rng_seed=3)
    extra = df[_main(df) & (df["condition"] == "jpeg")].copy()
    extra["condition"], extra["ece"] = "sensor_noise", 0.9
    with_extra = pd.concat([df, extra], ignore_index=True)
    table = ece_increase_by_condition(with_extra)
    assert list(table["kind"]) == ["paper"] * 15 + ["extra"] * 3
    assert (
        table.loc[table["kind"] == "paper"]
        .reset_index(drop=True)
        .equals(ece_increase_by_condition(df).reset_index(drop=True))
    )
    pd.testing.assert_frame_equal(
        discrimination_calibration_correlation(with_extra),
        discrimination_calibration_correlation(df),
    )


def test_regime_comparison_names_encoders_without_a_crs():
    from crsbench.stats import regime_comparison

    df = simulate_runs(n_encoders=3, datasets=("isic2019",), seeds=3, rng_seed=4,
                       regimes=("frozen", "lora"))  # fmt: skip
    lora_low = (df["regime"] == "lora") & (df["encoder"] == "clip") & (df["fraction"] == 0.01)
    table = regime_comparison(df[~lora_low]).set_index("scope")
    assert table.loc["all", "n"] == 2 and np.isfinite(table.loc["all", "kendall_tau"])
    assert table.loc["all", "note"] == (
        "clip (lora): isic2019: L: fraction 0.01 missing (seeds 0, 1, 2)"
    )


def test_a_shift_target_other_than_the_papers_is_an_extra(tmp_path):
    df = _worked_runs()
    other = df[_main(df) & (df["fraction"] == 1.0) & (df["condition"] == "clean")].copy()
    other["eval_dataset"], other["condition"] = "derm7pt", "shift"
    other.loc[other["encoder"] == "resnet50", "auroc"] = CLEAN_AUC - 0.10
    per_seed = axes_from_runs(_store(pd.concat([df, other], ignore_index=True), tmp_path))
    mine = per_seed[per_seed["encoder"] == "resnet50"]
    assert mine["robustness_drop"].to_numpy() == pytest.approx([0.010] * 3, abs=1e-12)
    # extras: sensor noise 3 × 0.25 and the derm7pt shift 0.10: mean 0.85/4, max 0.25
    expected = 0.5 * (3 * 0.25 + 0.10) / 4 + 0.5 * 0.25
    assert mine["robustness_drop_extra"].to_numpy() == pytest.approx([expected] * 3, abs=1e-12)
    assert (mine["n_conditions"] == 15).all() and (mine["n_extra_conditions"] == 4).all()
