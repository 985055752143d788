"""The coverage benchmark's scenarios and R's tie-aware interval, on planted truth: the planted
posteriors are calibrated, population values agree with an independent computation, an
encoder with an unrun cell is left out by the scoring code, R's interval is the basic one at
κ = 0 and holds near ties where the basic one does not, and a reduced benchmark run covers."""

from __future__ import annotations

import numpy as np
import pytest

from crsbench.stats.intervals import basic_interval
from crsbench.stats.patient_bootstrap import SEED_ONLY, TEST_PATIENTS_X_SEEDS
from crsbench.stats.robustness_interval import r_interval, tie_aware_roots
from crsbench.testing.coverage import LEADER_IN_TIER1, rankable_cells, run_scenario
from crsbench.testing.planted import PlantedEncoder, population_ece
from crsbench.testing.planted_tasks import Population
from crsbench.testing.scenarios import APTOS, BINARY, ISIC, SCENARIOS, draw_parameters, draw_world


def _encoder(delta=1.5, temperature=1.0, bias=0.0) -> PlantedEncoder:
    return PlantedEncoder(delta, temperature, bias, (delta,) * 15, (delta,) * 4, 0.0, None)


@pytest.mark.parametrize("model", [ISIC, APTOS, BINARY])
def test_planted_posterior_is_calibrated_at_unit_temperature(model):
    # the generator's posterior formula is right: untempered, it is calibrated (ECE ~ 0),
    # tempered it is not
    pop = Population.draw(model, 100_000, seed=3)
    assert pop.ece(1.5, _encoder()) < 0.006
    assert pop.ece(1.5, _encoder(temperature=0.6, bias=0.3)) > 0.03


def test_population_ece_matches_the_binary_reference():
    # the scenario world's binary truth against crsbench.testing.planted's own computation
    p = _encoder(1.2, 0.7, 0.2)
    ours = Population.draw(BINARY, 400_000, seed=1).ece(1.2, p)
    assert ours == pytest.approx(population_ece(1.2, p, n=400_000, seed=2), abs=0.003)


def test_multiclass_population_auroc_falls_with_separation():
    pop = Population.draw(ISIC, 20_000, seed=0)
    p = _encoder()
    a = [pop.auroc(d, p) for d in (0.5, 1.0, 2.0)]
    assert 0.5 < a[0] < a[1] < a[2] < 1.0


def test_the_encoder_with_an_unrun_cell_is_left_out():
    sc = SCENARIOS["missing cell"]
    params = draw_parameters(sc, np.random.default_rng(0))
    cells = draw_world(sc, params, np.random.default_rng(1))
    assert ("e01", "aptos2019") not in {(c.encoder, c.dataset) for c in cells}
    kept = rankable_cells(cells, sc)
    assert {c.encoder for c in kept} == {"e00", "e02"} and len(kept) == 4


def test_r_interval_is_the_basic_interval_at_kappa_zero():
    rng = np.random.default_rng(0)
    drops = rng.uniform(0.0, 0.05, 16)
    reps = drops + 0.01 * rng.standard_normal((500, 16))
    g = lambda d: 0.5 * d.mean(axis=-1) + 0.5 * d.max(axis=-1)  # noqa: E731
    r = r_interval(np.array([g(drops)]), g(reps)[:, None], [drops], [reps], kappa=0.0,
                   percentile=False)  # fmt: skip
    lo, hi = basic_interval(np.array([g(drops)]), g(reps)[:, None])
    assert r.low == pytest.approx(lo) and r.high == pytest.approx(hi)
    # with every drop tied, the roots are the centred noise's R
    roots = tie_aware_roots(g(drops), g(reps), drops, reps, kappa=1e9)
    assert roots == pytest.approx(g(reps - drops))


def _coverage(
    kappa: float, spread: float, n_worlds: int = 200, percentile: bool = True
) -> tuple[float, float]:
    """Coverage and mean plug-in bias of R's interval over planted worlds whose 16 true drops
    are 0.03 ± ``spread`` (equal at 0), estimated with independent noise of SD 0.01; the
    bootstrap replicates are drawn around the estimates as the test-set bootstrap's are."""
    rng = np.random.default_rng(11)
    true = 0.03 + spread * np.linspace(-1, 1, 16)
    g = lambda d: 0.5 * d.mean(axis=-1) + 0.5 * d.max(axis=-1)  # noqa: E731
    hits, bias = 0, 0.0
    for _ in range(n_worlds):
        est = true + 0.01 * rng.standard_normal(16)
        reps = est + 0.01 * rng.standard_normal((400, 16))
        r = r_interval(np.array([g(est)]), g(reps)[:, None], [est], [reps], kappa=kappa,
                       percentile=percentile)  # fmt: skip
        hits += bool(r.low[0] <= g(true) <= r.high[0])
        bias += g(est) - g(true)
    return hits / n_worlds, bias / n_worlds


def test_r_interval_holds_near_ties_where_the_basic_interval_does_not():
    basic, bias = _coverage(0.0, 0.0, percentile=False)
    assert bias > 0.006  # the plug-in max is biased upward (≈ +29 % of R here)
    assert basic < 0.85
    assert 0.90 <= _coverage(2.0, 0.0)[0] <= 0.99
    # drops close but not tied: the union with the basic interval keeps it in the band
    assert 0.90 <= _coverage(2.0, 0.01)[0] <= 0.99


def test_reduced_coverage_run_covers():
    run = run_scenario(SCENARIOS["binary"], 6, n_replicates=150, worlds_per_draw=3)
    cov = run.coverage()["coverage"].loc["binary"]
    main, seed_only = cov[TEST_PATIENTS_X_SEEDS], cov[SEED_ONLY]
    assert min(main[["CRS", "auroc", "ece", "retention", "robustness_drop"]]) >= 0.7
    assert seed_only["auroc"] <= 0.3
    assert main[LEADER_IN_TIER1] >= 0.8
    assert run.coverage()["worlds"].min() == 6
    assert run.interval_min(TEST_PATIENTS_X_SEEDS) == min(main.drop(LEADER_IN_TIER1).dropna())
    assert len(run.r_points) == 18 and (run.r_points["r_true"] > 0).all()


def test_axis_intervals_and_the_verdict_use_r_interval():
    from crsbench.stats.at_a_glance import at_a_glance_table, from_patient_bootstrap
    from crsbench.stats.patient_bootstrap import patient_seed_bootstrap
    from crsbench.testing import simulate_runs
    from crsbench.testing.planted import draw_world as draw_binary
    from crsbench.testing.planted import planted_parameters, population_table

    rng = np.random.default_rng(13)
    params = planted_parameters(3, ("isic2019",), rng)
    world = draw_binary(params, 150, 2, rng, population_table(params))
    res = patient_seed_bootstrap(world.cells, n_replicates=150, seed=0)
    r = res.r_interval()
    ci = res.axis_intervals()
    rows = ci[ci["axis"] == "robustness_drop"].reset_index(drop=True)
    np.testing.assert_allclose(rows["ci_low"], r.low)
    np.testing.assert_allclose(rows["ci_high"], r.high)
    b_lo, b_hi = basic_interval(res.point_axes[:, 3], res.axes[:, :, 3])
    assert (r.low <= b_lo + 1e-15).all() and (r.high >= b_hi - 1e-15).all()  # the union
    runs = simulate_runs(n_encoders=2, datasets=("isic2019",), seeds=2)
    table = at_a_glance_table(runs, from_patient_bootstrap(res)).set_index(["dataset", "question"])
    row = table.loc[("isic2019", "robustness")]
    i = [e for e, _ in res.cell_keys].index(row["leader"])
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((r.low[i], r.high[i]), abs=1e-15)
