"""Macro-AUROC and ECE of one prediction under many bootstrap weightings at once.

Each replicate is a row of a ``(B, n)`` weight matrix (how many times each test row was drawn);
a score column is sorted once and every replicate is evaluated as weights on the sorted scores
(:func:`crsbench.metrics.auroc_batch`), ECE bins are assigned once and every replicate is one
row of a matrix product. With all weights 1 both equal the store's metrics exactly
(:func:`crsbench.metrics.macro_auroc`, :func:`crsbench.metrics.expected_calibration_error`).
"""

from __future__ import annotations

import warnings

import numpy as np

from crsbench.metrics import auroc_batch

N_BINS = 15


def _binary_columns(y: np.ndarray, prob: np.ndarray, task: str):
    """Per column: (row mask or None, 0/1 target, score) as the macro AUROC defines them."""
    if task == "multiclass":
        for k in range(prob.shape[1]):
            yield None, (y == k).astype(float), prob[:, k]
        return
    for j in range(prob.shape[1]):
        m = ~np.isnan(y[:, j])
        if m.any():
            yield (None if m.all() else m), y[m, j], prob[m, j]


def weighted_macro_auroc(y: np.ndarray, prob: np.ndarray, task: str, w: np.ndarray) -> np.ndarray:
    """Macro AUROC for each row of ``w`` (shape ``(B,)``).

    A column without both classes in a replicate is left out of that replicate's mean, as
    :func:`crsbench.metrics.macro_auroc` leaves it out of the point estimate; NaN when every
    column is left out.
    """
    total = np.zeros(w.shape[0])
    n = np.zeros(w.shape[0])
    for mask, target, score in _binary_columns(y, prob, task):
        wj = w if mask is None else w[:, mask]
        auc = auroc_batch(target, score, sample_weight=wj)
        ok = np.isfinite(auc)
        total += np.where(ok, auc, 0.0)
        n += ok
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, total / n, np.nan)


def _bin_matrix(conf: np.ndarray, acc: np.ndarray, n_bins: int) -> np.ndarray:
    """``(n, n_bins)`` matrix with ``acc − conf`` in each row's bin (the ECE's binning)."""
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    idx = np.clip(np.searchsorted(edges, conf, side="right") - 1, 0, n_bins - 1)
    out = np.zeros((conf.size, n_bins))
    out[np.arange(conf.size), idx] = acc - conf
    return out


def _weighted_binned_ece(conf, acc, w, n_bins) -> np.ndarray:
    gaps = w @ _bin_matrix(conf, acc, n_bins)
    total = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, np.abs(gaps).sum(axis=1) / total, np.nan)


def weighted_ece(
    y: np.ndarray, prob: np.ndarray, task: str, w: np.ndarray, n_bins: int = N_BINS
) -> np.ndarray:
    """ECE (equal-width bins, top-label or mean per-label) for each row of ``w``."""
    if task == "multiclass":
        conf = prob.max(axis=1)
        acc = (prob.argmax(axis=1) == y).astype(float)
        return _weighted_binned_ece(conf, acc, w, n_bins)
    parts = []
    for j in range(prob.shape[1]):
        m = ~np.isnan(y[:, j])
        if m.any():
            parts.append(_weighted_binned_ece(prob[m, j], y[m, j], w[:, m], n_bins))
    if not parts:
        return np.full(w.shape[0], np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(np.stack(parts), axis=0)
