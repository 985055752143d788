"""The stratified test-set bootstrap against rliable (Agarwal et al. 2021), the field's
reference for aggregate intervals: tasks are strata, and within each the units are resampled
with replacement, independently of the other strata.

Our side uses the bootstrap's own machinery: resample counts from
:func:`crsbench.stats.resample.resample_counts_for` (one stream per stratum) and the
replicate-weighted mean and AUROC of :mod:`crsbench.stats.weighted_metrics`. The probability
of improvement P(X > Y) is a Mann–Whitney AUROC (X's runs positive, Y's negative, ties one
half), so our weighted AUROC must equal rliable's point estimate exactly. Percentile
intervals are compared on 5,000 replicates each: the Monte Carlo standard error of a 2.5 %
quantile is about 1 % of the interval's width per side, so endpoints must agree within 6 %
of the width (more than 4 standard errors of the difference).
"""

from __future__ import annotations

import numpy as np
import pytest

rly = pytest.importorskip("rliable.library")
rmetrics = pytest.importorskip("rliable.metrics")

from crsbench.stats.resample import resample_counts_for  # noqa: E402
from crsbench.stats.weighted_metrics import ReplicateWeights, weighted_auroc_column  # noqa: E402

REPS = 5_000
TOL = 0.06  # share of the interval's width


@pytest.fixture(autouse=True)
def _arch_seed_keyword(monkeypatch):
    """rliable 1.2.0 passes ``random_state=`` to arch's bootstrap, which arch 8 (the release
    that works with pandas 3) renamed ``seed=``; translate it."""
    base = pytest.importorskip("arch.bootstrap.base")
    init = base.IIDBootstrap.__init__

    def translated(self, *args, random_state=None, seed=None, **kwargs):
        init(self, *args, seed=random_state if seed is None else seed, **kwargs)

    monkeypatch.setattr(base.IIDBootstrap, "__init__", translated)


def _percentile(reps: np.ndarray) -> np.ndarray:
    return np.percentile(reps, [2.5, 97.5])


def _assert_close(ours: np.ndarray, theirs: np.ndarray) -> None:
    width = theirs[1] - theirs[0]
    assert width > 0
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=TOL * width)


def test_stratified_interval_of_an_aggregate_mean_matches_rliable():
    rng = np.random.default_rng(0)
    n, tasks = 120, 4
    scores = rng.gamma(2.0, 1.0, (n, tasks)) * np.array([1.0, 2.0, 0.5, 3.0])
    # ours: each task's units drawn from its own stream, mean per task, then over tasks
    per_task = [
        resample_counts_for(f"task{t}", n, range(REPS)) @ scores[:, t] / n for t in range(tasks)
    ]
    ours = np.mean(per_task, axis=0)
    points, intervals = rly.get_interval_estimates(
        {"a": scores}, lambda x: np.array([x.mean(axis=0).mean()]), reps=REPS,
        random_state=np.random.RandomState(1),
    )  # fmt: skip
    assert ours.mean() == pytest.approx(points["a"][0], abs=0.01 * scores.std())
    _assert_close(_percentile(ours), intervals["a"][:, 0])


@pytest.mark.slow  # rliable runs scipy's Mann–Whitney once per replicate and task (~20 s)
def test_probability_of_improvement_and_its_interval_match_rliable():
    rng = np.random.default_rng(2)
    runs, tasks = 40, 3
    x = np.round(rng.normal(0.3, 1.0, (runs, tasks)), 1)  # rounding: ties count one half
    y = np.round(rng.normal(0.0, 1.0, (runs, tasks)), 1)
    target = np.r_[np.ones(runs), np.zeros(runs)]
    point, reps = [], []
    for t in range(tasks):
        score = np.r_[x[:, t], y[:, t]]
        ones = ReplicateWeights.of(np.ones((1, 2 * runs), dtype=np.int32))
        point.append(weighted_auroc_column(target, score, ones)[0])
        # X's and Y's runs resampled independently within the task, as rliable does
        counts = np.hstack([resample_counts_for(f"task{t}/{side}", runs, range(REPS))
                            for side in ("x", "y")])  # fmt: skip
        reps.append(weighted_auroc_column(target, score, ReplicateWeights.of(counts)))
    assert np.mean(point) == pytest.approx(rmetrics.probability_of_improvement(x, y), abs=1e-12)
    points, intervals = rly.get_interval_estimates(
        {"x,y": [x, y]}, lambda a, b: np.array([rmetrics.probability_of_improvement(a, b)]),
        reps=REPS, random_state=np.random.RandomState(3),
    )  # fmt: skip
    assert np.mean(point) == pytest.approx(points["x,y"][0], abs=1e-12)
    _assert_close(_percentile(np.mean(reps, axis=0)), intervals["x,y"][:, 0])
