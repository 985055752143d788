"""The per-dataset verdict table on a toy store with planted per-seed values (leaders,
intervals and gaps worked by hand), and its agreement with the paired-seed bootstrap."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crsbench.scoring import axes_from_runs, load_anchors
from crsbench.stats import paired_seed_bootstrap
from crsbench.stats.at_a_glance import _cell_crs, at_a_glance_table, seed_axis_replicates

ENCODERS = ("resnet50", "vit_b16", "clip", "siglip")
CLEAN = {"resnet50": [0.90, 0.91, 0.92], "vit_b16": [0.80, 0.81, 0.82],
         "clip": [0.70, 0.71, 0.72], "siglip": [0.60, 0.61, 0.62]}  # fmt: skip
JPEG_DROP = {"resnet50": [0.05] * 3, "vit_b16": [0.05] * 3,
             "clip": [0.010, 0.030, 0.020], "siglip": [0.025, 0.005, 0.027]}  # fmt: skip
SHIFT_ECE_UP = {"resnet50": 0.01, "vit_b16": 0.05, "clip": 0.05, "siglip": 0.05}


def _plant(df: pd.DataFrame, main_mask) -> None:
    clean = main_mask(df, "clean")
    seed_of = df["seed"].astype(int)
    df.loc[clean, "auroc"] = [CLEAN[e][s] for e, s in zip(df.loc[clean, "encoder"],
                                                          seed_of[clean], strict=True)]  # fmt: skip
    jpeg = main_mask(df, "jpeg")
    df.loc[jpeg, "auroc"] = [CLEAN[e][s] - JPEG_DROP[e][s] for e, s in
                             zip(df.loc[jpeg, "encoder"], seed_of[jpeg], strict=True)]  # fmt: skip
    ece = df[clean].set_index(["encoder", "seed"])["ece"]
    shift = main_mask(df, "shift")
    df.loc[shift, "ece"] = [ece[(e, s)] + SHIFT_ECE_UP[e] for e, s in
                            zip(df.loc[shift, "encoder"], df.loc[shift, "seed"], strict=True)]  # fmt: skip


@pytest.fixture(scope="module")
def verdict(planted_store) -> pd.DataFrame:
    runs = planted_store(ENCODERS, 3, _plant)
    reps = seed_axis_replicates(axes_from_runs(runs), n_replicates=2_000, seed=0)
    return at_a_glance_table(runs, reps, seed=0).set_index(["dataset", "question"])


def test_discrimination_leader_interval_and_gap(verdict: pd.DataFrame) -> None:
    r = verdict.loc[("chexpert", "discrimination")]
    assert (r["leader"], r["runner_up"]) == ("resnet50", "vit_b16")
    assert r["value"] == pytest.approx(0.91)
    # seed-resampled means of 0.90, 0.91, 0.92 lie in [0.90, 0.92]
    assert 0.90 - 1e-12 <= r["ci_low"] <= 0.91 <= r["ci_high"] <= 0.92 + 1e-12
    # the paired difference is 0.10 at every seed, so in every replicate
    assert (r["gap"], r["gap_ci_low"], r["gap_ci_high"]) == pytest.approx((0.10, 0.10, 0.10))
    assert r["distinguishable"] and r["interval"] == "seed-only"


def test_jpeg_leader_not_distinguishable_from_runner_up(verdict: pd.DataFrame) -> None:
    r = verdict.loc[("chexpert", "jpeg")]
    # mean drops: siglip (0.025+0.005+0.027)/3 = 0.019, clip 0.020, the others 0.05
    assert (r["leader"], r["runner_up"]) == ("siglip", "clip")
    assert (r["value"], r["runner_up_value"], r["gap"]) == pytest.approx((0.019, 0.020, 0.001))
    # paired differences clip - siglip = -0.015, +0.025, -0.007: the gap's interval spans 0
    assert r["gap_ci_low"] < 0 < r["gap_ci_high"] and not r["distinguishable"]
    assert not r["higher_is_better"]


def test_shift_calibration_question(verdict: pd.DataFrame) -> None:
    r = verdict.loc[("chexpert→mimic_cxr", "shift_calibration")]
    assert (r["leader"], r["value"], r["ci_low"], r["ci_high"]) == (
        "resnet50", pytest.approx(0.01), pytest.approx(0.01), pytest.approx(0.01))  # fmt: skip
    assert r["gap"] == pytest.approx(0.04) and r["distinguishable"]


def test_every_question_answered_once_per_dataset(verdict: pd.DataFrame) -> None:
    qs = verdict.loc["chexpert"].index.tolist()
    assert qs == ["pick", "discrimination", "calibration", "label_efficiency", "robustness",
                  "jpeg"]  # fmt: skip
    assert (verdict["n_encoders"] == 4).all()


def test_cell_replicates_are_the_paired_seed_bootstrap_draws() -> None:
    from crsbench.testing import simulate_runs

    per_seed = axes_from_runs(simulate_runs(n_encoders=5, seeds=3))
    anc = load_anchors()
    reps = seed_axis_replicates(per_seed, n_replicates=300, seed=7)
    _, crs = _cell_crs(reps, anc)
    encoders = sorted({e for e, _ in reps.cell_keys})
    mean = np.stack([crs[:, [i for i, (e, _) in enumerate(reps.cell_keys) if e == enc]]
                     .mean(axis=1) for enc in encoders], axis=1)  # fmt: skip
    boot = paired_seed_bootstrap(per_seed, anc, n_replicates=300, seed=7)
    assert np.allclose(mean, boot.replicates)


def test_every_row_says_what_its_interval_is(verdict: pd.DataFrame) -> None:
    """Seed-only rows are seed-only ranges; on the test-patient resamples every value is a 95%
    CI except the shift ECE increase (percentile spread, not shown to cover: a range)."""
    from crsbench.stats.at_a_glance import GAPS_SHOWN_TO_COVER, from_patient_bootstrap
    from crsbench.stats.patient_bootstrap import patient_seed_bootstrap
    from crsbench.testing import simulate_runs
    from crsbench.testing.planted import draw_world, planted_parameters, population_table

    assert set(verdict["interval_kind"]) == {"seed-only range"}
    rng = np.random.default_rng(21)
    params = planted_parameters(2, ("chexpert",), rng)
    world = draw_world(params, 120, 2, rng, population_table(params))
    res = patient_seed_bootstrap(world.cells, n_replicates=100, seed=0)
    runs = simulate_runs(n_encoders=2, datasets=("chexpert",), seeds=2)
    table = at_a_glance_table(runs, from_patient_bootstrap(res))
    kinds = dict(zip(table["question"], table["interval_kind"], strict=True))
    assert kinds.pop("shift_calibration") == "bootstrap range"
    assert set(kinds.values()) == {"95% CI"} and "jpeg" in kinds
    gaps = dict(zip(table["question"], table["gap_interval_kind"], strict=True))
    shown = {q: "95% CI" if q in GAPS_SHOWN_TO_COVER else "bootstrap range" for q in gaps}
    assert gaps == shown and gaps["shift_calibration"] == "bootstrap range"
    assert set(verdict["gap_interval_kind"]) == {"seed-only range"}


def test_basic_rows_carry_the_bias_corrected_value_and_gap(verdict: pd.DataFrame) -> None:
    """Beside each 95% CI of the test-patient verdict: ``value_corrected`` = 2·θ̂ − mean(θ*)
    of the leader's cell (worked here from the raw replicates), the gap's likewise; NaN
    beside a bootstrap range or a seed-only range."""
    from crsbench.stats.at_a_glance import from_patient_bootstrap
    from crsbench.stats.patient_bootstrap import patient_seed_bootstrap
    from crsbench.testing import simulate_runs
    from crsbench.testing.planted import draw_world, planted_parameters, population_table

    assert verdict["value_corrected"].isna().all() and verdict["gap_corrected"].isna().all()
    rng = np.random.default_rng(21)
    params = planted_parameters(2, ("chexpert",), rng)
    world = draw_world(params, 120, 2, rng, population_table(params))
    res = patient_seed_bootstrap(world.cells, n_replicates=100, seed=0)
    runs = simulate_runs(n_encoders=2, datasets=("chexpert",), seeds=2)
    table = at_a_glance_table(runs, from_patient_bootstrap(res)).set_index("question")
    cell = {enc: i for i, (enc, _) in enumerate(res.cell_keys)}
    for question, j, sign in (("discrimination", 0, 1.0), ("label_efficiency", 2, 1.0)):
        row = table.loc[question]
        lead, second = cell[row["leader"]], cell[row["runner_up"]]
        raw = [float(b[lead, j]) for b in res.axes]
        want = 2 * res.point_axes[lead, j] - sum(raw) / len(raw)
        assert row["value_corrected"] == pytest.approx(want, abs=1e-12)
        gaps = [sign * float(b[lead, j] - b[second, j]) for b in res.axes]
        assert row["gap_corrected"] == pytest.approx(2 * row["gap"] - sum(gaps) / len(gaps))
    ece = table.loc["calibration"]
    raw = [float(b[cell[ece["leader"]], 1]) for b in res.axes]
    want = 2 * ece["value"] - sum(raw) / len(raw)
    assert ece["value_corrected"] == pytest.approx(want, abs=1e-12)
    assert np.isnan(table.loc["shift_calibration", "value_corrected"])  # a bootstrap range
    assert np.isfinite(table.loc["robustness", "value_corrected"])  # R̂ − the root's bias
