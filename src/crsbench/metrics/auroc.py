"""Exact AUROC: Mann–Whitney U with midranks (ties count one half), as scikit-learn.

One sort per column, vectorised over columns. A class or label without both positives and
negatives is *excluded* from the macro average and reported, never scored as 0.5.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Literal, overload

import numpy as np
from scipy.stats import rankdata

from crsbench.core.errors import DataError
from crsbench.metrics._checks import UndefinedMetricWarning, as_scores, check


@dataclass(frozen=True)
class MetricDetails:
    """A macro-averaged metric with its per-class (or per-label) parts.

    Attributes
    ----------
    value : float
        The macro average over the included columns; NaN when every column is excluded.
    per_label : numpy.ndarray
        Per-column value, NaN for excluded columns.
    n_pos, n_neg : numpy.ndarray
        Positives and negatives per column (masked rows left out).
    excluded : dict[int, str]
        Column index → reason it was left out of the average.
    suspicious : tuple[int, ...]
        Included columns whose AUROC is exactly 0.5 (often a collapsed probe).
    """

    value: float
    per_label: np.ndarray
    n_pos: np.ndarray
    n_neg: np.ndarray
    excluded: dict[int, str] = field(default_factory=dict)
    suspicious: tuple[int, ...] = ()

    @property
    def n_excluded(self) -> int:
        """How many columns were left out of the average."""
        return len(self.excluded)


def _rank_auroc(ranks: np.ndarray, pos: np.ndarray, n_pos: np.ndarray, n_neg: np.ndarray):
    rank_sum = (ranks * pos).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (rank_sum - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)


def _weighted_auroc_column(y: np.ndarray, s: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted AUROC of one score column for a (B, n) weight matrix; ties count one half."""
    order = np.argsort(s, kind="mergesort")
    s_sorted = s[order]
    starts = np.flatnonzero(np.r_[True, s_sorted[1:] != s_sorted[:-1]])
    pos = y[order].astype(bool)
    wp = np.where(pos, w[:, order], 0.0)
    wn = np.where(pos, 0.0, w[:, order])
    gp = np.add.reduceat(wp, starts, axis=1)
    gn = np.add.reduceat(wn, starts, axis=1)
    below = np.cumsum(gn, axis=1) - gn
    num = (gp * (below + 0.5 * gn)).sum(axis=1)
    den = gp.sum(axis=1) * gn.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / den, np.nan)


def auroc_batch(
    y_true: np.ndarray, scores: np.ndarray, sample_weight: np.ndarray | None = None
) -> np.ndarray:
    """AUROC of many score columns against one binary target, optionally with weights.

    Parameters
    ----------
    y_true : array of shape (n,)
        0/1 targets (no NaN).
    scores : array of shape (n,) or (n, m)
        Score columns; higher means more likely positive.
    sample_weight : array of shape (n,) or (B, n), optional
        Row weights, e.g. bootstrap counts for B replicates sharing one sort per column.

    Returns
    -------
    numpy.ndarray
        Shape (m,) without weights or with (n,) weights; (B, m) with (B, n) weights. NaN where
        the target lacks positives or negatives (for that weighting).
    """
    y = np.asarray(y_true)
    s = as_scores(scores, "scores")
    squeeze = s.ndim == 1
    if squeeze:
        s = s[:, None]
    if y.shape != (s.shape[0],):
        raise DataError(f"y_true must have shape ({s.shape[0]},). Got {y.shape} instead.")
    y = y.astype(np.float64)
    if not np.all((y == 0) | (y == 1)):
        raise DataError("y_true must hold only 0 and 1 in auroc_batch. Got other values instead.")
    if sample_weight is None:
        n_pos = np.full(s.shape[1], y.sum())
        n_neg = np.full(s.shape[1], y.size - y.sum())
        out = _rank_auroc(rankdata(s, axis=0), y[:, None], n_pos, n_neg)
        return out[0] if squeeze else out
    w = np.asarray(sample_weight, dtype=np.float64)
    single = w.ndim == 1
    w2 = w[None, :] if single else w
    if w2.ndim != 2 or w2.shape[1] != s.shape[0]:
        raise DataError(
            f"sample_weight must have shape ({s.shape[0]},) or (B, {s.shape[0]}). "
            f"Got {w.shape} instead."
        )
    out = np.stack([_weighted_auroc_column(y, s[:, j], w2) for j in range(s.shape[1])], axis=1)
    if single:
        out = out[0]
    return out[..., 0] if squeeze else out


def _columns(task: str, y: np.ndarray, scores: np.ndarray):
    """Per-column (AUROC, n_pos, n_neg) for either task, one sort per column."""
    n, k = scores.shape
    if task == "multiclass":
        pos = np.zeros((n, k))
        pos[np.arange(n), y] = 1.0
        n_pos = pos.sum(axis=0)
        n_neg = n - n_pos
        return _rank_auroc(rankdata(scores, axis=0), pos, n_pos, n_neg), n_pos, n_neg
    present = ~np.isnan(y)
    n_pos = np.nansum(y, axis=0)
    n_neg = present.sum(axis=0) - n_pos
    auc = np.full(k, np.nan)
    full = present.all(axis=0)
    if full.any():
        auc[full] = _rank_auroc(
            rankdata(scores[:, full], axis=0), y[:, full], n_pos[full], n_neg[full]
        )
    for j in np.flatnonzero(~full):
        m = present[:, j]
        if m.any():
            auc[j] = _rank_auroc(
                rankdata(scores[m, j])[:, None],
                y[m, j][:, None],
                n_pos[j : j + 1],
                n_neg[j : j + 1],
            )[0]
    return auc, n_pos, n_neg


@overload
def macro_auroc(
    y_true: object, y_score: object, task: str, *, return_details: Literal[False] = ...
) -> float: ...
@overload
def macro_auroc(
    y_true: object, y_score: object, task: str, *, return_details: Literal[True]
) -> MetricDetails: ...
@overload
def macro_auroc(
    y_true: object, y_score: object, task: str, *, return_details: bool
) -> float | MetricDetails: ...


def macro_auroc(
    y_true: object, y_score: object, task: str, *, return_details: bool = False
) -> float | MetricDetails:
    """Macro-averaged AUROC, exact (midranks for ties), equal to scikit-learn's ``ovr`` macro.

    Parameters
    ----------
    y_true : array-like
        ``multiclass``: vector of class indices in ``[0, K)``. ``multilabel``: N×L matrix of
        0 / 1 / NaN (NaN = masked).
    y_score : array-like of shape (N, K) or (N, L)
        Probabilities or any monotone scores per class / label.
    task : {"multiclass", "multilabel"}
        Multi-class is one-vs-rest; multi-label averages labels that have both classes.
    return_details : bool, default False
        Return a :class:`MetricDetails` (value, per-label AUROC, n_pos, excluded columns).

    Returns
    -------
    float or MetricDetails
        NaN (with an :class:`UndefinedMetricWarning`) when no column has both classes.
    """
    y, scores = check(task, y_true, y_score)
    auc, n_pos, n_neg = _columns(task, y, scores)
    excluded: dict[int, str] = {}
    for j in range(scores.shape[1]):
        if n_pos[j] == 0 and n_neg[j] == 0:
            excluded[j] = "no labelled rows"
        elif n_pos[j] == 0:
            excluded[j] = "no positives"
        elif n_neg[j] == 0:
            excluded[j] = "no negatives"
    keep = np.array([j not in excluded for j in range(scores.shape[1])])
    auc = np.where(keep, auc, np.nan)
    if keep.any():
        value = float(np.mean(auc[keep]))
    else:
        value = float("nan")
        warnings.warn(
            f"macro_auroc is undefined: none of the {scores.shape[1]} columns has both positives "
            "and negatives; returning NaN.",
            UndefinedMetricWarning,
            stacklevel=2,
        )
    if not return_details:
        return value
    suspicious = tuple(int(j) for j in np.flatnonzero(keep & (auc == 0.5)))
    return MetricDetails(value, auc, n_pos, n_neg, excluded, suspicious)
