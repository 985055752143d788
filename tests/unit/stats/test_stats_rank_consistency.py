"""Tiers, P(rank 1) and P(top 3) come from the same bias-corrected replicates, so no tier
contradicts P(rank 1): an encoder outside tier 1 has P(rank 1) ≤ ``rank1_bound`` and the
encoder with the highest P(rank 1) is in tier 1 (docs/scoring.md, "Tiers and rank
probabilities")."""

from __future__ import annotations

import numpy as np
import pytest

from crsbench.stats import paired_seed_bootstrap
from crsbench.stats.bootstrap import _summarise
from crsbench.stats.intervals import basic_interval, rank1_bound, reflected_replicates
from crsbench.stats.patient_bootstrap import patient_seed_bootstrap, per_seed_axes
from crsbench.testing.planted import draw_world, planted_parameters, population_table


def _contradictions(ranks, level: float, n_rep: int) -> list[str]:
    """Encoders outside tier 1 with P(rank 1) above the bound, and a highest-P(rank 1)
    encoder outside tier 1."""
    bound = rank1_bound(level, n_rep)
    r = ranks.dropna(subset=["tier"])
    bad = [f"{e}: tier {t}, P(rank 1) {p:.3f} > {bound:.3f}"
           for e, t, p in zip(r["encoder"], r["tier"], r["p_rank1"], strict=True)
           if t > 1 and p > bound]  # fmt: skip
    top = r.loc[r["p_rank1"].idxmax()]
    if top["tier"] != 1:
        bad.append(f"highest P(rank 1) {top['encoder']} in tier {top['tier']}")
    return bad


def test_rank1_bound_is_alpha_plus_one_replicate():
    assert rank1_bound(0.95, 1000) == pytest.approx(0.025)  # floor(0.025 · 999) + 1 = 25
    assert rank1_bound(0.95, 200) == pytest.approx(5 / 200)  # floor(4.975) + 1 = 5
    assert rank1_bound(0.95, 41) == pytest.approx(2 / 41)


def test_raw_replicates_would_contradict_the_basic_tiers_reflected_ones_do_not():
    """A hand-made case: A's replicates sit well below its estimate (a biased statistic), so
    the raw replicates rank B first while the basic interval puts A ahead; the reflected
    replicates give A tier 1 and P(rank 1) ≈ 1."""
    rng = np.random.default_rng(0)
    n = 1000
    point = np.array([0.60, 0.59])
    raw = np.column_stack([rng.normal(0.50, 0.005, n), rng.normal(0.59, 0.005, n)])
    new = _summarise(["A", "B"], point, reflected_replicates(point, raw), 3, 0.95).ranks
    assert dict(zip(new["encoder"], new["tier"], strict=True)) == {"A": 1, "B": 2}
    assert dict(zip(new["encoder"], new["p_rank1"], strict=True)) == {"A": 1.0, "B": 0.0}
    assert not _contradictions(new, 0.95, n)
    # the old mix: basic tiers (as above) with P(rank 1) counted on the raw replicates
    old = _summarise(["A", "B"], point, raw, 3, 0.95).ranks.set_index("encoder")
    assert old.loc["B", "p_rank1"] == 1.0  # B "surely first" while the tiers put it second
    # the CRS intervals are still the basic ones, 2·θ̂ − q
    lo, hi = basic_interval(point, raw, 0.95)
    got = new.set_index("encoder").loc[["A", "B"]]
    np.testing.assert_allclose(got["crs_ci_low"], lo, atol=1e-12)
    np.testing.assert_allclose(got["crs_ci_high"], hi, atol=1e-12)


@pytest.mark.parametrize("world_seed", [12, 13])
def test_no_tier_contradicts_p_rank1_on_planted_worlds(world_seed):
    """Near ties (6 encoders, 120 patients, 2 seeds): for the test-patient bootstrap and the
    seed-only one, no encoder outside tier 1 has P(rank 1) above the bound, the most likely
    leader is in tier 1, and P(rank 1) is the share of reflected replicates an encoder leads."""
    rng = np.random.default_rng(world_seed)
    params = planted_parameters(6, ("isic2019",), rng)
    world = draw_world(params, 120, 2, rng, population_table(params))
    n_rep = 200
    res = patient_seed_bootstrap(world.cells, n_replicates=n_rep, seed=world_seed)
    assert not _contradictions(res.ranks, 0.95, n_rep)
    point = res.ranks.set_index("encoder")["CRS"].sort_index().to_numpy()
    reflected = reflected_replicates(point, res.replicates)
    lead = np.bincount(np.argmax(reflected, axis=1), minlength=len(point)) / n_rep
    got = res.ranks.set_index("encoder")["p_rank1"].sort_index().to_numpy()
    np.testing.assert_allclose(got, lead)
    # the CRS interval: the union of the basic and the percentile interval of the replicates
    lo, hi = basic_interval(point, res.replicates, 0.95)
    q_lo, q_hi = np.quantile(res.replicates, [0.025, 0.975], axis=0)
    t = res.ranks.set_index("encoder").sort_index()
    np.testing.assert_allclose(t["crs_ci_low"], np.minimum(lo, q_lo), atol=1e-12)
    np.testing.assert_allclose(t["crs_ci_high"], np.maximum(hi, q_hi), atol=1e-12)
    seed_only = paired_seed_bootstrap(per_seed_axes(world.cells), n_replicates=n_rep, seed=1)
    assert not _contradictions(seed_only.ranks, 0.95, n_rep)
