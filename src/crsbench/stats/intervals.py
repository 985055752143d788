"""Bootstrap intervals of the test-set bootstrap's per-cell axes (docs/scoring.md,
"ECE interval").

D (the AUROC) gets the percentile interval of its replicates (:func:`auroc_interval`); C,
L and R the basic (bias-corrected) interval ``[2θ̂ − q_hi, 2θ̂ − q_lo]`` (R's widened for
near-tied drops, :mod:`crsbench.stats.robustness_interval`). The ECE's interval is the union of that basic interval and the basic interval
of a second bootstrap world whose bin gaps are shrunk one standard error towards 0
(:func:`crsbench.stats.weighted_metrics.weighted_shrunk_ece`): the plug-in ECE is biased
upward by up to ``√(2/π)`` standard errors per bin where a bin's true gap is near 0, a
bootstrap built on the observed gaps repeats too little of that bias, and the basic interval
then misses low population ECEs from above. The shrunk world repeats it where a bin may be
calibrated; since which world is nearer the truth is unknown, the interval takes both. The
lower end is not below 0 (an ECE is never negative). A mean of several labels' ECEs reaches
only part of the way to the shrunk world (:data:`MULTILABEL_ECE_REACH`); one ECE's upper end
also reaches part of the way up to the percentile interval's top
(:data:`SINGLE_ECE_TOP_REACH`).

The CRS, its differences, the tiers, P(rank 1) and P(top 3) of the test-patient bootstrap all
come from the reflected replicates :func:`reflected_replicates` (the CRS intervals widened to
the union with the percentile interval, the differences' :data:`DIFFERENCE_REACH` of the way
towards it, :func:`crsbench.stats.bootstrap.widen_differences`).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

# The names every page prints are defined once in crsbench.protocol (imported from here too).
from crsbench.protocol import (
    BOOTSTRAP_RANGE,  # noqa: F401
    CI95,  # noqa: F401
    SEED_ONLY,  # noqa: F401
    SEED_ONLY_RANGE,  # noqa: F401
    TEST_PATIENTS_X_SEEDS,  # noqa: F401
    interval_label,  # noqa: F401
    outside_phrase,  # noqa: F401
)


def percentile_interval(rep: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The percentile interval of the finite values of ``rep`` (NaN, NaN when there are none).

    Not shown to cover where crsbench uses it (subgroup values, worst values, the
    worst-subgroup CRS, the verdict's shift ECE increase): printed as a
    :data:`BOOTSTRAP_RANGE`, never as a 95 % CI."""
    rep = rep[np.isfinite(rep)]
    if rep.size == 0:
        return float("nan"), float("nan")
    a = (1 - level) / 2
    return float(np.quantile(rep, a)), float(np.quantile(rep, 1 - a))


def auroc_interval(reps: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """D's interval: the percentile interval ``[q_lo, q_hi]`` of the AUROC replicates
    ``reps`` (``(B, …)``), as pROC's bootstrap interval is.

    An AUROC is unbiased and bounded by 1, and its bootstrap distribution skews the way its
    sampling distribution does (more so with few positives); the basic interval mirrors that
    skew and covered 0.89–0.92 on planted truth, the percentile interval 0.95–0.97 on the
    tuning worlds (docs/scoring.md, "Coverage on planted truth")."""
    alpha = (1 - level) / 2
    return np.nanquantile(reps, alpha, axis=0), np.nanquantile(reps, 1 - alpha, axis=0)


def basic_interval(
    point: np.ndarray, reps: np.ndarray, level: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """``[2θ̂ − q_hi, 2θ̂ − q_lo]`` of replicates ``reps`` (``(B, …)``) around ``point``."""
    alpha = (1 - level) / 2
    q_lo = np.nanquantile(reps, alpha, axis=0)
    q_hi = np.nanquantile(reps, 1 - alpha, axis=0)
    return 2 * point - q_hi, 2 * point - q_lo


#: How far the ECE interval of a macro ECE over several labels (multi-label cells) reaches
#: from the basic interval towards the shrunk world's: its replicates average the labels'
#: noise (about √L narrower) while the two worlds stay one bias apart, so the full union
#: covered 0.97–1.0 of planted multi-label worlds. On 200 tuning worlds of 40 parameter draws
#: per CheXpert-like scenario (spread / near-tied drops) 0.8 covered 0.953 and 0.933 (0.6:
#: 0.908, 0.885; 0.75: 0.942, 0.923; 0.9: 0.975, 0.957; 1: 0.983, 0.970). One ECE (binary, a
#: multi-class top-label ECE) takes the full union (1.0) and reaches up
#: (:data:`SINGLE_ECE_TOP_REACH`).
MULTILABEL_ECE_REACH = 0.8


#: How far one ECE's interval (a binary label, a multi-class top-label ECE: reach 1) reaches
#: up from the union's upper end towards the top of the replicates' percentile interval.
#: Both bias corrections (basic, shrunk world) move the interval down by the bootstrap's
#: estimate of the plug-in's upward bias; where that estimate is too large (a true ECE well
#: above 0, resampled into bins of larger gaps) the population value lies above both, and the
#: uncorrected percentile interval's top reaches it. On tuning worlds of the single-ECE
#: scenarios (binary, ISIC-like, APTOS-like, near-tied APTOS-like, a missing cell) the union
#: alone covered 0.898-0.934 (0.894-0.915 on 1,000 reporting worlds each), reach 0.25
#: 0.943-0.957, 0.5 0.964-0.969, 0.75 0.967-0.976 and the whole percentile top 0.968-0.980:
#: 0.25 is nearest 0.95 in every scenario.
SINGLE_ECE_TOP_REACH = 0.25


#: How far the interval of a CRS difference (the leader's gap, the tiers' comparisons)
#: reaches from its basic interval towards the percentile interval of the raw differences
#: (:func:`crsbench.stats.bootstrap.widen_differences`; the CRS intervals take the whole
#: union). On 200 tuning worlds of each of the seven planted scenarios (stream 1, worlds
#: 3300-3499) the leader gap covered 0.890-0.950 with the basic interval (reach 0),
#: 0.905-0.965 at 0.25, 0.920-0.980 at 0.5, 0.930-0.990 at 0.75 and 0.935-0.990 with the whole
#: union (reach 1, which had covered 0.983 and 0.984 of 1,000 binary and near-tied
#: APTOS-like reporting worlds): 0.5 is the widest reach that kept all seven inside 0.90-0.98.
DIFFERENCE_REACH = 0.5


def toward(start, end, reach):
    """The point ``reach`` of the way from ``start`` to ``end`` (elementwise; 0: ``start``,
    1: ``end`` up to rounding): how far a widened interval's end moves towards another's."""
    start = np.asarray(start, dtype=float)
    return start + reach * (np.asarray(end, dtype=float) - start)


def ece_reach(tasks: Sequence[str], n_labels: Sequence[int]) -> np.ndarray:
    """The reach of each cell's ECE interval towards the shrunk world (:func:`ece_interval`):
    :data:`MULTILABEL_ECE_REACH` for a multi-label cell of two labels or more (a mean of
    ECEs), 1 otherwise (one ECE: a binary label, stored as one-label multi-label, or a
    multi-class top-label ECE)."""
    return np.array([MULTILABEL_ECE_REACH if t == "multilabel" and k > 1 else 1.0
                     for t, k in zip(tasks, n_labels, strict=True)])  # fmt: skip


def ece_interval(
    point: np.ndarray,
    reps: np.ndarray,
    shrunk_point: np.ndarray,
    shrunk_reps: np.ndarray,
    level: float = 0.95,
    reach: np.ndarray | float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """The ECE interval: union of the basic interval of the replicates as drawn and of the
    shrunk world's, ``[θ̂ − (q_hi − θ̃), θ̂ − (q_lo − θ̃)]`` (``θ̃`` the shrunk world's ECE,
    ``q`` the quantiles of its replicates), lower end clipped at 0. With ``reach < 1`` (a
    mean of several labels' ECEs) the shrunk world's ends are taken that fraction of the way
    from the basic interval's (:data:`MULTILABEL_ECE_REACH`, :func:`ece_reach`); at reach 1
    (one ECE) the upper end also moves :data:`SINGLE_ECE_TOP_REACH` of the way up to the
    percentile interval's top, when that is higher.

    Parameters
    ----------
    point, shrunk_point : array
        The plug-in ECE and the shrunk world's ECE, one per cell.
    reps, shrunk_reps : array
        ``(B, cells)`` replicates of each.
    level : float
        Coverage level.
    reach : float or array
        Per cell (or one for all): 1 takes the shrunk world's interval as it is.
    """
    lo, hi = basic_interval(point, reps, level)
    alpha = (1 - level) / 2
    s_lo = point - (np.nanquantile(shrunk_reps, 1 - alpha, axis=0) - shrunk_point)
    s_hi = point - (np.nanquantile(shrunk_reps, alpha, axis=0) - shrunk_point)
    r = np.asarray(reach, dtype=float)
    s_lo = np.where(r == 1.0, s_lo, toward(lo, s_lo, r))
    s_hi = np.where(r == 1.0, s_hi, toward(hi, s_hi, r))
    top = np.maximum(hi, s_hi)
    p_hi = np.nanquantile(reps, 1 - alpha, axis=0)  # the percentile interval's top
    up = np.where(r == 1.0, SINGLE_ECE_TOP_REACH, 0.0) * np.maximum(p_hi - top, 0.0)
    return np.maximum(np.minimum(lo, s_lo), 0.0), top + up


def reflected_replicates(point: np.ndarray, reps: np.ndarray) -> np.ndarray:
    """The bias-corrected (reflected) replicates ``2·θ̂ − θ*`` of ``reps`` (``(B, …)``)
    around ``point``.

    Their percentile interval is the basic interval (:func:`basic_interval`), so ranking,
    tiering and counting on them gives intervals, tiers, P(rank 1) and P(top 3) that come
    from one bias-corrected distribution and cannot contradict each other: the interval of
    a difference is the percentile interval of the difference of reflected replicates, and
    an encoder whose tier head beats it (lower bound of head − it > 0) is ahead of the head
    in at most ``(1 − level)/2`` of them (:func:`rank1_bound`).
    """
    return 2 * np.asarray(point)[None] - reps


def rank1_bound(level: float, n_replicates: int) -> float:
    """The largest P(rank 1) an encoder outside tier 1 can have on ``n_replicates`` reflected
    replicates: ``(1 − level)/2 + 1/B``.

    Outside tier 1 means the lower ``(1 − level)/2`` quantile of (head − encoder) over the
    replicates is above 0; with numpy's linear interpolation at most
    ``⌊α(B − 1)⌋ + 1`` replicates are then ≤ 0, and in every other replicate the head is
    ahead, so the encoder is not ranked first there.
    """
    alpha = (1 - level) / 2
    return (np.floor(alpha * (n_replicates - 1)) + 1) / n_replicates


def corrected_estimate(point: np.ndarray, reps: np.ndarray) -> np.ndarray:
    """The bias-corrected estimate ``2·θ̂ − mean(θ*)`` of raw replicates ``reps`` (``(B, …)``)
    around the plug-in ``point``: the mean of the reflected replicates
    (:func:`reflected_replicates`), the centre a basic interval implies.

    The protocol's plug-in stays the headline figure; this is printed beside a basic interval
    (``*_corrected`` columns) so that a plug-in outside its own interval is explained."""
    with warnings.catch_warnings():  # an unscored encoder's replicates are all NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(np.where(np.isfinite(reps), reps, np.nan), axis=0)
    return 2 * np.asarray(point, dtype=float) - mean
