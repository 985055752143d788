"""The CRS replicates are scored from R's tie-aware replicates (docs/scoring.md, "R
interval"): κ = 0 leaves R's replicates as drawn, every drop tied re-draws R from the
centred noise of its drops, a cell without drops keeps its replicates, only R's column of
the axes changes, and R's union with its percentile interval contains both."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crsbench.scoring.anchors import AXES, load_anchors
from crsbench.stats.intervals import basic_interval, percentile_interval
from crsbench.stats.patient_bootstrap import crs_replicates, patient_seed_bootstrap
from crsbench.stats.robustness_interval import (
    cell_r_drops,
    r_interval,
    r_percentile_cells,
    shift_drop_cells,
    tie_aware_replicates,
)
from crsbench.testing.planted import draw_world, planted_parameters, population_table


def _g(d: np.ndarray) -> np.ndarray:
    return 0.5 * d.mean(axis=-1) + 0.5 * d.max(axis=-1)


def _drops(seed: int = 0, k: int = 16, b: int = 300):
    rng = np.random.default_rng(seed)
    drops = 0.03 + 0.002 * rng.standard_normal(k)
    reps = drops + 0.01 * rng.standard_normal((b, k))
    return drops, reps


def test_tie_aware_replicates_by_hand():
    drops, reps = _drops()
    point, rep_r = np.array([_g(drops), 0.5]), np.column_stack([_g(reps), np.linspace(0, 1, 300)])
    pd_, rd = [drops, np.empty(0)], [reps, np.empty((0, 0))]
    np.testing.assert_array_equal(tie_aware_replicates(point, rep_r, pd_, rd, 0.0), rep_r)
    tied = tie_aware_replicates(point, rep_r, pd_, rd, 1e9)
    # every drop tied: R̂ + (R* − R̂) + 0.5·(max(d* − d̂) − (max d* − max d̂))
    want = _g(reps) + 0.5 * ((reps - drops).max(axis=1) - reps.max(axis=1) + drops.max())
    np.testing.assert_allclose(tied[:, 0], want, atol=1e-15)
    np.testing.assert_array_equal(tied[:, 1], rep_r[:, 1])  # no drops: as drawn


def test_r_union_with_percentile_contains_both():
    drops, reps = _drops(1)
    p, r = np.array([_g(drops)]), _g(reps)[:, None]
    plain = r_interval(p, r, [drops], [reps], percentile=False)
    wide = r_interval(p, r, [drops], [reps], percentile=True)
    lo, hi = percentile_interval(r[:, 0])
    assert wide.low[0] == pytest.approx(min(plain.low[0], lo))
    assert wide.high[0] == pytest.approx(max(plain.high[0], hi))
    b_lo, b_hi = basic_interval(p, r)
    assert wide.low[0] <= b_lo[0] and wide.high[0] >= b_hi[0]


def test_r_takes_the_percentile_interval_only_where_it_holds_a_shift_drop():
    """Planted CheXpert-like cells (15 conditions + the MIMIC-CXR shift) and ISIC-like ones
    (conditions only): the printed R interval is the union with the percentile interval on
    the first and basic ∪ tie-aware on the second, in the bootstrap's intervals and the
    verdict's (at-a-glance) alike."""
    from crsbench.stats.at_a_glance import _r_lead_interval, from_patient_bootstrap

    rng = np.random.default_rng(8)
    params = planted_parameters(2, ("isic2019", "chexpert"), rng)
    world = draw_world(params, 120, 2, rng, population_table(params))
    res = patient_seed_bootstrap(world.cells, n_replicates=80, seed=1)
    has_shift = shift_drop_cells(res.cell_keys, res.extras)
    assert has_shift.tolist() == [ds == "chexpert" for _, ds in res.cell_keys]
    np.testing.assert_array_equal(r_percentile_cells(res.cell_keys, res.extras), has_shift)
    printed = res.r_interval()
    wide, plain = res.r_interval(percentile=True), res.r_interval(percentile=False)
    for i, shifted in enumerate(has_shift):
        want = wide if shifted else plain
        assert (printed.low[i], printed.high[i]) == (want.low[i], want.high[i])
    ci = res.axis_intervals().set_index(["encoder", "dataset", "axis"])
    lead = _r_lead_interval(from_patient_bootstrap(res), 0.95)
    for i, key in enumerate(res.cell_keys):
        row = ci.loc[(*key, "robustness_drop")]
        assert (row["ci_low"], row["ci_high"]) == (printed.low[i], printed.high[i])
        assert lead(i)[:2] == pytest.approx((printed.low[i], printed.high[i]), abs=1e-15)


def test_crs_replicates_change_only_r():
    rng = np.random.default_rng(5)
    params = planted_parameters(3, ("isic2019",), rng)
    world = draw_world(params, 120, 2, rng, population_table(params))
    res = patient_seed_bootstrap(world.cells, n_replicates=60, seed=3)
    anc, c = load_anchors(None), AXES.index("robustness_drop")
    drops = cell_r_drops(res.cell_keys, res.point_extras, res.extras)
    none = ([np.empty(0)] * len(world.cells), [np.empty((0, 0))] * len(world.cells))
    p0, raw0, _ = crs_replicates(world.cells, res.axes, res.point_axes, none, anc, kappa=0.0)
    np.testing.assert_allclose(res.ranks.set_index("encoder").sort_index()["CRS"], p0)
    p, raw, enc = crs_replicates(world.cells, res.axes, res.point_axes, drops, anc, kappa=1e9)
    swapped = res.axes.copy()
    swapped[:, :, c] = tie_aware_replicates(res.point_axes[:, c], res.axes[:, :, c], *drops, 1e9)
    _, want, _ = crs_replicates(world.cells, swapped, res.point_axes, none, anc, kappa=0.0)
    np.testing.assert_allclose(raw, want)
    np.testing.assert_allclose(p, p0)  # the point CRS is the plug-in's
    assert not np.allclose(raw, raw0)  # R's tie-aware roots moved the replicates


def test_crs_and_differences_take_the_percentile_union_and_tiers_follow():
    """A's replicates sit below its estimate (a biased statistic): the basic interval of
    A − B is above 0 but the percentile one is not, so the union holds 0 and A, B share a
    tier; P(rank 1) is still counted on the reflected replicates."""
    from crsbench.stats.bootstrap import _summarise, widen_differences
    from crsbench.stats.intervals import reflected_replicates

    rng = np.random.default_rng(0)
    point = np.array([0.60, 0.59])
    raw = np.column_stack([rng.normal(0.57, 0.005, 1000), rng.normal(0.59, 0.005, 1000)])
    base = _summarise(["A", "B"], point, reflected_replicates(point, raw), 3, 0.95)
    assert dict(zip(base.ranks["encoder"], base.ranks["tier"], strict=True)) == {"A": 1, "B": 2}
    new = widen_differences(base, ["A", "B"], point, raw, 0.95, reach=1.0)
    row = new.pairwise.set_index(["encoder_a", "encoder_b"]).loc[("A", "B")]
    old = base.pairwise.set_index(["encoder_a", "encoder_b"]).loc[("A", "B")]
    lo, hi = percentile_interval(raw[:, 0] - raw[:, 1])
    assert row["ci_low"] == pytest.approx(min(lo, old["ci_low"]))
    assert row["ci_high"] == pytest.approx(max(hi, old["ci_high"]))
    assert row["ci_low"] < 0 < old["ci_low"]
    assert set(new.ranks["tier"]) == {1}
    got = new.ranks.set_index("encoder")
    b_lo, b_hi = basic_interval(point, raw)
    q_lo, q_hi = np.quantile(raw, [0.025, 0.975], axis=0)
    np.testing.assert_allclose(got.loc[["A", "B"], "crs_ci_low"], np.minimum(b_lo, q_lo))
    np.testing.assert_allclose(got.loc[["A", "B"], "crs_ci_high"], np.maximum(b_hi, q_hi))
    np.testing.assert_array_equal(new.ranks["p_rank1"], base.ranks["p_rank1"])


def test_one_encoder_has_no_difference_to_widen():
    """A cohort profile of one encoder: no pair, the CRS interval still takes the union
    (an empty pairwise table once raised IndexError: float positions)."""
    from crsbench.stats.bootstrap import _summarise, widen_differences
    from crsbench.stats.intervals import reflected_replicates

    rng = np.random.default_rng(1)
    point = np.array([0.5])
    raw = rng.normal(0.48, 0.01, (500, 1))
    base = _summarise(["A"], point, reflected_replicates(point, raw), 3, 0.95)
    new = widen_differences(base, ["A"], point, raw, 0.95)
    assert new.pairwise.empty and list(new.ranks["tier"]) == [1]
    b_lo, _ = basic_interval(point, raw)
    assert new.ranks["crs_ci_low"].iloc[0] == pytest.approx(min(b_lo[0], np.quantile(raw, 0.025)))


def test_a_difference_reaches_part_of_the_way_to_its_percentile_interval():
    """At reach r a difference's lower end is the basic end moved r of the way to the
    percentile end (0: the basic interval, 1: the union); the CRS intervals keep the whole
    union, and the tiers follow the difference's lower end."""
    from crsbench.stats.bootstrap import _summarise, widen_differences
    from crsbench.stats.intervals import DIFFERENCE_REACH, reflected_replicates

    rng = np.random.default_rng(0)
    point = np.array([0.60, 0.59])
    raw = np.column_stack([rng.normal(0.57, 0.005, 1000), rng.normal(0.59, 0.005, 1000)])
    base = _summarise(["A", "B"], point, reflected_replicates(point, raw), 3, 0.95)
    old = base.pairwise.set_index(["encoder_a", "encoder_b"]).loc[("A", "B")]
    lo, hi = percentile_interval(raw[:, 0] - raw[:, 1])
    assert lo < old["ci_low"] and hi < old["ci_high"]  # the percentile interval sits lower
    full = widen_differences(base, ["A", "B"], point, raw, 0.95, reach=1.0)
    for reach in (0.0, 0.3, DIFFERENCE_REACH, 1.0):
        new = widen_differences(base, ["A", "B"], point, raw, 0.95, reach=reach)
        row = new.pairwise.set_index(["encoder_a", "encoder_b"]).loc[("A", "B")]
        assert row["ci_low"] == pytest.approx(old["ci_low"] + reach * (lo - old["ci_low"]))
        assert row["ci_high"] == pytest.approx(old["ci_high"])  # never narrowed
        pd.testing.assert_frame_equal(new.ranks.drop(columns="tier"),
                                      full.ranks.drop(columns="tier"))  # fmt: skip
        want = {"A": 1, "B": 1} if row["ci_low"] <= 0 else {"A": 1, "B": 2}
        assert dict(zip(new.ranks["encoder"], new.ranks["tier"], strict=True)) == want
    assert widen_differences(base, ["A", "B"], point, raw, 0.95, reach=0.0).pairwise.equals(
        base.pairwise
    )
