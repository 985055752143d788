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
