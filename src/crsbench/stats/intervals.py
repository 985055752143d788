"""Bootstrap intervals of the test-set bootstrap's per-cell axes (docs/scoring.md,
"ECE interval").

Every axis gets the basic (bias-corrected) interval ``[2θ̂ − q_hi, 2θ̂ − q_lo]`` of its
replicates. The ECE's interval is the union of that basic interval and the basic interval
of a second bootstrap world whose bin gaps are shrunk one standard error towards 0
(:func:`crsbench.stats.weighted_metrics.weighted_shrunk_ece`): the plug-in ECE is biased
upward by up to ``√(2/π)`` standard errors per bin where a bin's true gap is near 0, a
bootstrap built on the observed gaps repeats too little of that bias, and the basic interval
then misses low population ECEs from above. The shrunk world repeats it where a bin may be
calibrated; since which world is nearer the truth is unknown, the interval takes both. The
lower end is not below 0 (an ECE is never negative).
"""

from __future__ import annotations

import numpy as np

from crsbench.stats.bootstrap import BootstrapResult, _tiers


def percentile_interval(rep: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The percentile interval of the finite values of ``rep`` (NaN, NaN when there are none)."""
    rep = rep[np.isfinite(rep)]
    if rep.size == 0:
        return float("nan"), float("nan")
    a = (1 - level) / 2
    return float(np.quantile(rep, a)), float(np.quantile(rep, 1 - a))


def basic_interval(
    point: np.ndarray, reps: np.ndarray, level: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """``[2θ̂ − q_hi, 2θ̂ − q_lo]`` of replicates ``reps`` (``(B, …)``) around ``point``."""
    alpha = (1 - level) / 2
    q_lo = np.nanquantile(reps, alpha, axis=0)
    q_hi = np.nanquantile(reps, 1 - alpha, axis=0)
    return 2 * point - q_hi, 2 * point - q_lo


def ece_interval(
    point: np.ndarray,
    reps: np.ndarray,
    shrunk_point: np.ndarray,
    shrunk_reps: np.ndarray,
    level: float = 0.95,
) -> tuple[np.ndarray, np.ndarray]:
    """The ECE interval: union of the basic interval of the replicates as drawn and of the
    shrunk world's, ``[θ̂ − (q_hi − θ̃), θ̂ − (q_lo − θ̃)]`` (``θ̃`` the shrunk world's ECE,
    ``q`` the quantiles of its replicates), lower end clipped at 0.

    Parameters
    ----------
    point, shrunk_point : array
        The plug-in ECE and the shrunk world's ECE, one per cell.
    reps, shrunk_reps : array
        ``(B, cells)`` replicates of each.
    level : float
        Coverage level.
    """
    lo, hi = basic_interval(point, reps, level)
    alpha = (1 - level) / 2
    s_lo = point - (np.nanquantile(shrunk_reps, 1 - alpha, axis=0) - shrunk_point)
    s_hi = point - (np.nanquantile(shrunk_reps, alpha, axis=0) - shrunk_point)
    return np.maximum(np.minimum(lo, s_lo), 0.0), np.maximum(hi, s_hi)


def basic_rank_intervals(res: BootstrapResult, point: np.ndarray, level: float) -> BootstrapResult:
    """``res`` with its percentile intervals of CRS and of each CRS difference replaced by
    basic (bias-corrected) ones, ``2·θ̂ − q``, and the tiers recomputed from them.

    ECE, the max inside R and the dominance share P are biased in finite test sets, and the
    bootstrap repeats that bias on top of the estimate; the percentile interval then misses
    the population value far more often than nominal (shown on planted truth,
    ``benchmarks/coverage.py``), the basic interval corrects it.
    """
    alpha = (1 - level) / 2
    reps = res.replicates
    order = list(res.ranks["encoder"])
    encoders = sorted(order)
    q_lo, q_hi = np.nanquantile(reps, alpha, axis=0), np.nanquantile(reps, 1 - alpha, axis=0)
    by_enc = dict(zip(encoders, range(len(encoders)), strict=True))
    idx = [by_enc[e] for e in order]
    ranks = res.ranks.copy()
    ranks["crs_ci_low"] = 2 * point[idx] - q_hi[idx]
    ranks["crs_ci_high"] = 2 * point[idx] - q_lo[idx]
    diffs = reps[:, :, None] - reps[:, None, :]
    d_point = point[:, None] - point[None, :]
    d_lo = 2 * d_point - np.nanquantile(diffs, 1 - alpha, axis=0)
    d_hi = 2 * d_point - np.nanquantile(diffs, alpha, axis=0)
    pw = res.pairwise.copy()
    ia = [by_enc[e] for e in pw["encoder_a"]]
    ib = [by_enc[e] for e in pw["encoder_b"]]
    pw["ci_low"], pw["ci_high"] = d_lo[ia, ib], d_hi[ia, ib]
    tiers = _tiers(point, d_lo)
    ranks["tier"] = [tiers[by_enc[e]] for e in order]
    return BootstrapResult(ranks, pw, reps)
