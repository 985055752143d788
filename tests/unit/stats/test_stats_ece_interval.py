"""The ECE interval: the shrunk bootstrap world (hand-worked), the union interval, and its
coverage of the population ECE on planted worlds beside the basic interval's."""

from __future__ import annotations

import numpy as np
import pytest

from crsbench.stats.intervals import (
    MULTILABEL_ECE_REACH,
    SINGLE_ECE_TOP_REACH,
    basic_interval,
    ece_interval,
    ece_reach,
)
from crsbench.stats.patient_bootstrap import patient_seed_bootstrap
from crsbench.stats.resample import patient_index, resample_counts_for
from crsbench.stats.weighted_metrics import (
    ReplicateWeights,
    _shrunk_gap_shift,
    weighted_ece,
    weighted_shrunk_ece,
)
from crsbench.testing.planted import draw_world, planted_parameters, population_table


def test_shrunk_gap_shift_hand_worked():
    # bin 0: patients with gap sums 0.3, 0.1 over 1 and 1 rows: mean 0.2, SE sqrt(0.02)/2
    # bin 1: gap sums 0.02, -0.02 (mean 0, within one SE): shrunk to 0, shift 0
    # bin 2: empty
    gap = np.array([[0.3, 0.02, 0.0], [0.1, -0.02, 0.0]])
    n_rows = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0]])
    se = np.sqrt(0.1**2 + 0.1**2) / 2
    np.testing.assert_allclose(_shrunk_gap_shift(gap, n_rows), [-se, 0.0, 0.0], atol=1e-15)


def test_shrunk_ece_at_unit_weights_is_the_shrunk_worlds_ece():
    rng = np.random.default_rng(0)
    n = 400
    conf = rng.uniform(0.05, 0.95, n)
    y = (rng.random(n) < conf + 0.05).astype(float)
    groups = np.repeat(np.arange(n // 2), 2).astype(str)
    _, inv = patient_index(groups)
    ones = ReplicateWeights.of(np.ones((1, n // 2), dtype=np.int32), inv)
    bins = np.clip((conf * 15).astype(int), 0, 14)
    expected = 0.0
    for k in range(15):
        m = bins == k
        if not m.any():
            continue
        g = (y - conf)[m]
        per_patient = np.bincount(inv[m], weights=g - g.mean())
        se = np.sqrt((per_patient**2).sum()) / m.sum()
        expected += m.sum() * max(abs(g.mean()) - se, 0.0)
    got = weighted_shrunk_ece(y[:, None], conf[:, None], "multilabel", ones)[0]
    assert got == pytest.approx(expected / n, abs=1e-12)
    plug = weighted_ece(y[:, None], conf[:, None], "multilabel", ones)[0]
    assert got < plug


def test_ece_interval_is_the_union_and_not_below_zero():
    reps = np.linspace(0.04, 0.08, 1001)[:, None]  # quantiles 0.041, 0.079
    shrunk = np.linspace(0.0, 0.05, 1001)[:, None]  # quantiles 0.00125, 0.04875
    lo_b, hi_b = basic_interval(np.array([0.05]), reps)
    assert (lo_b[0], hi_b[0]) == pytest.approx((0.021, 0.059))
    lo, hi = ece_interval(np.array([0.05]), reps, np.array([0.01]), shrunk)
    # shrunk world: [0.05 - (0.04875 - 0.01), 0.05 - (0.00125 - 0.01)] = [0.01125, 0.05875];
    # one ECE: the union's top 0.059 moves up towards the percentile top 0.079
    top = 0.059 + SINGLE_ECE_TOP_REACH * (0.079 - 0.059)
    assert (lo[0], hi[0]) == pytest.approx((0.01125, top))
    assert 0.059 < top < 0.079
    lo, _ = ece_interval(np.array([0.01]), reps, np.array([0.0]), shrunk)
    assert lo[0] == 0.0


def test_one_ece_keeps_its_top_when_the_percentile_top_is_lower():
    # replicates below the estimate: the percentile top (0.039) is under the union's (0.079)
    reps = np.linspace(0.02, 0.04, 1001)[:, None]
    shrunk = np.linspace(0.0, 0.05, 1001)[:, None]
    _, hi = ece_interval(np.array([0.05]), reps, np.array([0.01]), shrunk)
    assert hi[0] == pytest.approx(max(2 * 0.05 - 0.0205, 0.05 - (0.00125 - 0.01)))


def test_a_multi_label_ece_interval_reaches_part_of_the_way_to_the_shrunk_world():
    reps = np.linspace(0.04, 0.08, 1001)[:, None]  # basic [0.021, 0.059]
    shrunk = np.linspace(0.0, 0.05, 1001)[:, None]  # shrunk world [0.01125, 0.05875]
    lo, hi = ece_interval(np.array([0.05]), reps, np.array([0.01]), shrunk, reach=0.6)
    # lower end 0.021 + 0.6 * (0.01125 - 0.021) = 0.01515; the upper stays the basic 0.059
    # (a mean of several labels' ECEs does not reach up to the percentile top)
    assert (lo[0], hi[0]) == pytest.approx((0.01515, 0.059))
    full = ece_interval(np.array([0.05]), reps, np.array([0.01]), shrunk, reach=1.0)
    assert full == ece_interval(np.array([0.05]), reps, np.array([0.01]), shrunk)
    np.testing.assert_array_equal(
        ece_reach(["multilabel", "multiclass", "multilabel"], [14, 1, 1]),
        [MULTILABEL_ECE_REACH, 1.0, 1.0],
    )


def _ece_hits(world, n_rep: int, seed: int, pop) -> tuple[list[bool], list[bool]]:
    union, basic = [], []
    for c in world.cells:
        _, inv = patient_index(c.test.groups)
        counts = resample_counts_for(c.dataset, int(inv.max()) + 1, range(n_rep), seed)
        rw, one = ReplicateWeights.of(counts, inv), ReplicateWeights.of(counts[:1] * 0 + 1, inv)
        y, p = c.test.y, c.clean
        point, shrunk_point = weighted_ece(y, p, "multilabel", one), weighted_shrunk_ece(
            y, p, "multilabel", one)  # fmt: skip
        reps = weighted_ece(y, p, "multilabel", rw)[:, None]
        shrunk = weighted_shrunk_ece(y, p, "multilabel", rw)[:, None]
        truth = pop[(c.encoder, c.dataset)]
        lo, hi = ece_interval(point, reps, shrunk_point, shrunk)
        union.append(bool(lo[0] <= truth <= hi[0]))
        lo, hi = basic_interval(point, reps)
        basic.append(bool(lo[0] <= truth <= hi[0]))
    return union, basic


@pytest.mark.slow  # ~20 s on the shared machine; the default suite's reduced coverage test
# (test_stats_patient_bootstrap.py) includes the ECE interval
def test_reduced_ece_coverage_on_planted_worlds():
    rng = np.random.default_rng(11)
    params = planted_parameters(4, ("isic2019", "chexpert"), rng)
    population = population_table(params)
    pop = population.set_index(["encoder", "dataset"])["ece"]
    union, basic = [], []
    for w in range(15):
        world = draw_world(params, 400, 1, rng, population)
        u, b = _ece_hits(world, 300, w, pop)
        union += u
        basic += b
    # 120 intervals (measured 0.908 vs the basic interval's 0.825; 40 worlds: 0.916 vs 0.859)
    assert np.mean(union) >= 0.88
    assert np.mean(union) >= np.mean(basic)


def test_axis_intervals_use_the_ece_interval():
    rng = np.random.default_rng(12)
    params = planted_parameters(2, ("isic2019",), rng)
    world = draw_world(params, 200, 2, rng, population_table(params))
    res = patient_seed_bootstrap(world.cells, n_replicates=200, seed=0)
    ci = res.axis_intervals()
    ece = ci[ci["axis"] == "ece"].reset_index(drop=True)
    labels = [c.test.y.shape[1] if c.test.y.ndim == 2 else 1 for c in world.cells]
    np.testing.assert_array_equal(res.ece_reach, ece_reach([c.task for c in world.cells], labels))
    lo, hi = ece_interval(res.point_axes[:, 1], res.axes[:, :, 1], res.point_ece_shrunk,
                          res.ece_shrunk, reach=res.ece_reach)  # fmt: skip
    np.testing.assert_allclose(ece["ci_low"], lo)
    np.testing.assert_allclose(ece["ci_high"], hi)
    b_lo, b_hi = basic_interval(res.point_axes[:, 1], res.axes[:, :, 1])
    assert (ece["ci_low"] <= np.maximum(b_lo, 0) + 1e-15).all()
    assert (ece["ci_high"] >= b_hi - 1e-15).all()
    assert (res.point_ece_shrunk <= res.point_axes[:, 1]).all()


def test_verdict_leader_ece_interval_is_the_ece_interval():
    from crsbench.stats.at_a_glance import at_a_glance_table, from_patient_bootstrap
    from crsbench.testing import simulate_runs

    rng = np.random.default_rng(13)
    params = planted_parameters(3, ("isic2019",), rng)
    world = draw_world(params, 200, 2, rng, population_table(params))
    res = patient_seed_bootstrap(world.cells, n_replicates=200, seed=0)
    runs = simulate_runs(n_encoders=2, datasets=("isic2019",), seeds=2)
    table = at_a_glance_table(runs, from_patient_bootstrap(res)).set_index(["dataset", "question"])
    row = table.loc[("isic2019", "calibration")]
    i = [e for e, _ in res.cell_keys].index(row["leader"])
    assert row["value"] == pytest.approx(res.point_axes[:, 1].min())
    lo, hi = ece_interval(res.point_axes[[i], 1], res.axes[:, [i], 1],
                          res.point_ece_shrunk[[i]], res.ece_shrunk[:, [i]],
                          reach=res.ece_reach[i])  # fmt: skip
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((lo[0], hi[0]), abs=1e-15)
    b_lo, _ = basic_interval(res.point_axes[[i], 1], res.axes[:, [i], 1])
    assert row["ci_low"] <= max(b_lo[0], 0.0)  # never narrower than the basic one


def test_only_the_cells_of_one_ece_reach_up_in_a_mixed_call():
    # two identical cells, one a single ECE (reach 1), one a mean of labels' ECEs (0.8)
    reps = np.tile(np.linspace(0.04, 0.08, 1001)[:, None], (1, 2))
    shrunk = np.tile(np.linspace(0.0, 0.05, 1001)[:, None], (1, 2))
    point, s_point = np.array([0.05, 0.05]), np.array([0.01, 0.01])
    lo, hi = ece_interval(point, reps, s_point, shrunk, reach=np.array([1.0, 0.8]))
    assert hi[0] == pytest.approx(0.059 + SINGLE_ECE_TOP_REACH * (0.079 - 0.059))
    assert hi[1] == pytest.approx(0.059)
    assert lo[0] == pytest.approx(0.01125)
    assert lo[1] == pytest.approx(0.021 + 0.8 * (0.01125 - 0.021))


def test_printed_c_intervals_are_the_method_on_a_planted_world():
    """The bootstrap's printed C interval, recomputed from its own replicates: the union
    towards the shrunk world, and for one ECE the top reaching up to the percentile top."""
    from crsbench.testing.scenarios import SCENARIOS
    from crsbench.testing.scenarios import draw_parameters as draw_scenario
    from crsbench.testing.scenarios import draw_world as draw_scenario_world

    sc = SCENARIOS["isic 8-class"]
    cells = draw_scenario_world(sc, draw_scenario(sc, np.random.default_rng(5)),
                                np.random.default_rng(6))  # fmt: skip
    res = patient_seed_bootstrap(cells, n_replicates=200, seed=3, n_jobs=1)
    ci = res.axis_intervals().query("axis == 'ece'").set_index(["encoder", "dataset"])
    reached_up = 0
    for i, key in enumerate(res.cell_keys):
        e = res.axes[:, i, 1]
        q_lo, q_hi = np.quantile(e, [0.025, 0.975])
        s_lo, s_hi = np.quantile(res.ece_shrunk[:, i], [0.025, 0.975])
        point, shrunk_point = res.point_axes[i, 1], res.point_ece_shrunk[i]
        top = max(2 * point - q_lo, point - (s_lo - shrunk_point))
        low = max(min(2 * point - q_hi, point - (s_hi - shrunk_point)), 0.0)
        want_hi = top + SINGLE_ECE_TOP_REACH * max(q_hi - top, 0.0)
        assert ci.loc[key, "ci_low"] == pytest.approx(low, abs=1e-12)
        assert ci.loc[key, "ci_high"] == pytest.approx(want_hi, abs=1e-12)
        reached_up += want_hi > top
    assert (res.ece_reach == 1.0).all() and reached_up > 0
