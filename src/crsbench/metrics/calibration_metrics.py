"""Probability-quality metrics: ECE (15 equal-width bins), Brier score, negative log-likelihood.

Conventions (docs/protocol.md section 7):

* ECE = Σ_b (n_b / N) · |acc_b − conf_b| over equal-width bins on [0, 1]; a value v falls in bin
  ``searchsorted(edges, v, side="right") - 1`` clipped to the last bin (1.0 goes to the last bin).
  Multi-class: top-label (conf = max probability, acc = argmax is right). Multi-label: for each
  label, the binary reliability ECE on the positive-class probability (masked rows left out),
  then the mean over labels with at least one labelled row.
* Brier: multi-class ``mean_i Σ_k (p_ik − 1[y_i = k])²`` (range [0, 2]); multi-label the mean
  over labels of the binary Brier on labelled rows.
* NLL: multi-class ``mean_i −log p_i,y_i``; multi-label the mean over labels of the binary
  cross-entropy on labelled rows. Probabilities are clipped to [1e-15, 1 − 1e-15].
"""

from __future__ import annotations

import numpy as np

from crsbench.core.errors import DataError
from crsbench.metrics._checks import check
from crsbench.protocol import ECE_BINS

_EPS = 1e-15


def _check_probs(p: np.ndarray) -> None:
    if p.size and (p.min() < 0.0 or p.max() > 1.0):
        raise DataError(
            f"y_prob must hold probabilities in [0, 1]. Got values in [{p.min():.4g}, "
            f"{p.max():.4g}] instead."
        )


def binned_ece(conf: np.ndarray, acc: np.ndarray, n_bins: int = ECE_BINS) -> float:
    """ECE of confidences ``conf`` against 0/1 outcomes ``acc`` with equal-width bins."""
    if n_bins < 1:
        raise ValueError(f"n_bins must be >= 1. Got {n_bins} instead.")
    conf = np.asarray(conf, dtype=np.float64)
    acc = np.asarray(acc, dtype=np.float64)
    if conf.size == 0:
        return float("nan")
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    idx = np.clip(np.searchsorted(edges, conf, side="right") - 1, 0, n_bins - 1)
    gap = np.bincount(idx, weights=acc - conf, minlength=n_bins)
    return float(np.abs(gap).sum() / conf.size)


def expected_calibration_error(
    y_true: object, y_prob: object, task: str, n_bins: int = ECE_BINS
) -> float:
    """Expected calibration error with ``n_bins`` equal-width bins on [0, 1].

    Parameters
    ----------
    y_true : array-like
        Class indices (multiclass) or an N×L 0/1/NaN matrix (multilabel).
    y_prob : array-like of shape (N, K) or (N, L)
        Predicted probabilities (multiclass rows should sum to one).
    task : {"multiclass", "multilabel"}
        Top-label ECE or mean per-label binary ECE.
    n_bins : int, default 15

    Returns
    -------
    float
        Lower is better; NaN for a multilabel input with no labelled entry at all.
    """
    y, p = check(task, y_true, y_prob)
    _check_probs(p)
    if task == "multiclass":
        top = p.argmax(axis=1)
        return binned_ece(p.max(axis=1), (top == y).astype(np.float64), n_bins)
    values = [
        binned_ece(p[m, j], y[m, j], n_bins)
        for j in range(p.shape[1])
        if (m := ~np.isnan(y[:, j])).any()
    ]
    return float(np.mean(values)) if values else float("nan")


def brier_score(y_true: object, y_prob: object, task: str) -> float:
    """Brier score (lower is better); see the module docstring for the exact conventions."""
    y, p = check(task, y_true, y_prob)
    _check_probs(p)
    if task == "multiclass":
        onehot = np.zeros_like(p)
        onehot[np.arange(len(y)), y] = 1.0
        return float(np.mean(np.sum((p - onehot) ** 2, axis=1)))
    present = ~np.isnan(y)
    cols = present.any(axis=0)
    sq = np.where(present, (p - np.nan_to_num(y)) ** 2, 0.0)
    per = sq.sum(axis=0)[cols] / present.sum(axis=0)[cols]
    return float(per.mean()) if per.size else float("nan")


def negative_log_likelihood(y_true: object, y_prob: object, task: str) -> float:
    """Mean negative log-likelihood (lower is better); probabilities clipped to [1e-15, 1−1e-15]."""
    y, p = check(task, y_true, y_prob)
    _check_probs(p)
    p = np.clip(p, _EPS, 1.0 - _EPS)
    if task == "multiclass":
        return float(-np.mean(np.log(p[np.arange(len(y)), y])))
    present = ~np.isnan(y)
    y0 = np.nan_to_num(y)
    bce = -(y0 * np.log(p) + (1.0 - y0) * np.log1p(-p))
    cols = present.any(axis=0)
    per = np.where(present, bce, 0.0).sum(axis=0)[cols] / present.sum(axis=0)[cols]
    return float(per.mean()) if per.size else float("nan")
