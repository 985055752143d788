"""Operating-point metric: sensitivity at a fixed specificity (docs/protocol.md section 13)."""

from __future__ import annotations

import warnings
from typing import Literal, overload

import numpy as np

from crsbench.metrics._checks import UndefinedMetricWarning, check
from crsbench.metrics.auroc import MetricDetails


def binary_sensitivity_at_specificity(y: np.ndarray, s: np.ndarray, specificity: float) -> float:
    """Largest sensitivity over thresholds ``score >= t`` whose specificity is ≥ ``specificity``.

    NaN when ``y`` lacks positives or negatives.
    """
    y = np.asarray(y, dtype=np.float64)
    s = np.asarray(s, dtype=np.float64)
    n_pos = float(y.sum())
    n_neg = float(y.size - n_pos)
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = np.argsort(-s, kind="mergesort")
    s_sorted, y_sorted = s[order], y[order]
    last = np.r_[np.flatnonzero(s_sorted[1:] != s_sorted[:-1]), s_sorted.size - 1]
    tps = np.r_[0.0, np.cumsum(y_sorted)[last]]
    fps = np.r_[0.0, np.cumsum(1.0 - y_sorted)[last]]
    allowed = fps <= np.floor((1.0 - specificity) * n_neg + 1e-9)
    return float(tps[allowed].max() / n_pos)


@overload
def sensitivity_at_specificity(
    y_true: object,
    y_score: object,
    task: str,
    specificity: float = ...,
    *,
    return_details: Literal[False] = ...,
) -> float: ...
@overload
def sensitivity_at_specificity(
    y_true: object,
    y_score: object,
    task: str,
    specificity: float = ...,
    *,
    return_details: Literal[True],
) -> MetricDetails: ...
@overload
def sensitivity_at_specificity(
    y_true: object,
    y_score: object,
    task: str,
    specificity: float = ...,
    *,
    return_details: bool,
) -> float | MetricDetails: ...


def sensitivity_at_specificity(
    y_true: object,
    y_score: object,
    task: str,
    specificity: float = 0.90,
    *,
    return_details: bool = False,
) -> float | MetricDetails:
    """Macro-averaged sensitivity at a fixed specificity (one-vs-rest for multi-class).

    Parameters
    ----------
    y_true, y_score, task
        As :func:`crsbench.metrics.macro_auroc`.
    specificity : float, default 0.90
        Target specificity in (0, 1); the protocol reports 0.90 and 0.95.
    return_details : bool, default False
        Return a :class:`~crsbench.metrics.auroc.MetricDetails` with per-column values.

    Returns
    -------
    float or MetricDetails
        Higher is better. Columns without both classes are excluded and reported.
    """
    if not 0.0 < specificity < 1.0:
        raise ValueError(f"specificity must be in (0, 1). Got {specificity!r} instead.")
    y, scores = check(task, y_true, y_score)
    k = scores.shape[1]
    values = np.full(k, np.nan)
    n_pos = np.zeros(k)
    n_neg = np.zeros(k)
    excluded: dict[int, str] = {}
    for j in range(k):
        if task == "multiclass":
            yj, sj = (y == j).astype(np.float64), scores[:, j]
        else:
            m = ~np.isnan(y[:, j])
            yj, sj = y[m, j], scores[m, j]
        n_pos[j], n_neg[j] = yj.sum(), yj.size - yj.sum()
        if n_pos[j] == 0 or n_neg[j] == 0:
            excluded[j] = "no positives" if n_pos[j] == 0 else "no negatives"
            continue
        values[j] = binary_sensitivity_at_specificity(yj, sj, specificity)
    keep = ~np.isnan(values)
    if keep.any():
        value = float(values[keep].mean())
    else:
        value = float("nan")
        warnings.warn(
            "sensitivity_at_specificity is undefined: no column has both classes; returning NaN.",
            UndefinedMetricWarning,
            stacklevel=2,
        )
    if not return_details:
        return value
    return MetricDetails(value, values, n_pos, n_neg, excluded)
