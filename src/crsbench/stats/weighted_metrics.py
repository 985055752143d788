"""Macro-AUROC and ECE of one prediction under many bootstrap weightings at once.

Each replicate is a row of a ``(B, n)`` weight matrix (how many times each test row was
drawn; :class:`ReplicateWeights`). The AUROC kernel is :mod:`crsbench.stats.replicate_auroc`
(one sort per score column, replicates as blocked sparse-matrix work, exact integer sums).
ECE gaps and rows are summed once per (patient, bin); every replicate's per-bin sums of all
label columns of a prediction are then one matrix product per block of replicates. With all
weights 1 the AUROC equals the store's (:func:`crsbench.metrics.macro_auroc`) exactly, the
ECE (:func:`crsbench.metrics.expected_calibration_error`) to float64 rounding.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.special import ndtr

from crsbench.protocol import ECE_BINS
from crsbench.stats.replicate_auroc import (
    weighted_auroc_column,
    weighted_auroc_columns,
    weighted_macro_auroc,
)
from crsbench.stats.replicate_weights import ReplicateWeights

__all__ = [
    "N_BINS",
    "ReplicateWeights",
    "weighted_auroc_column",
    "weighted_auroc_columns",
    "weighted_debiased_ece",
    "weighted_ece",
    "weighted_macro_auroc",
    "weighted_shrunk_ece",
    "weighted_ece_and_shrunk",
]

N_BINS = ECE_BINS
_ECE_BLOCK_ELEMENTS = 1 << 20  # patient counts per block of the ECE's matrix product (8 MiB)
_ECE_GROUP = 8  # label columns per matrix product (bounds its right-hand side)


def _bins(conf: np.ndarray, n_bins: int) -> np.ndarray:
    """Each row's equal-width bin on [0, 1] (the ECE's binning)."""
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    return np.clip(np.searchsorted(edges, conf, side="right") - 1, 0, n_bins - 1)


def _patient_bin_sums(conf, acc, w: ReplicateWeights, rows, n_bins):
    """Per (weight column, bin): the summed gaps ``acc − conf`` and the rows, ``(m, bins)``."""
    cols = w.inverse if rows is None else w.inverse[np.asarray(rows)]
    size = w.counts.shape[1] * n_bins
    cell = cols * n_bins + _bins(conf, n_bins)
    gap = np.bincount(cell, weights=acc - conf, minlength=size).reshape(-1, n_bins)
    n_rows = np.bincount(cell, minlength=size).reshape(-1, n_bins).astype(np.float64)
    return gap, n_rows


def _shrunk_gap_shift(gap: np.ndarray, n_rows: np.ndarray) -> np.ndarray:
    """Per bin, how far the mean gap moves when shrunk by one standard error towards 0.

    The standard error is cluster-robust (a patient's rows are one cluster); a bin whose
    mean gap is within one standard error of 0 goes to 0.
    """
    mass = n_rows.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(mass > 0, gap.sum(axis=0) / mass, 0.0)
        se = np.where(mass > 0, np.sqrt(((gap - mean * n_rows) ** 2).sum(axis=0)) / mass, 0.0)
    return np.sign(mean) * np.maximum(np.abs(mean) - se, 0.0) - mean


def _binned_eces(columns, w: ReplicateWeights, n_bins: int, worlds=(False,)) -> np.ndarray:
    """ECE of each ``(conf, acc, rows)`` column and replicate in each world, ``(worlds,
    columns, B)``: per bin ``Σ_bins |gap sum| / rows``.

    The gaps and rows are first summed per (weight column, bin); each replicate's per-bin sums
    of up to :data:`_ECE_GROUP` columns are then one matrix product with its weights, in
    blocks of replicates. A ``True`` world (shrunk) moves every bin's mean gap by
    :func:`_shrunk_gap_shift` (the same shift in every replicate); every world reads the same
    products, so the plug-in and the shrunk ECE cost one pass.
    """
    sums = [_patient_bin_sums(conf, acc, w, rows, n_bins) for conf, acc, rows in columns]
    out = np.empty((len(worlds), len(sums), w.n_replicates))
    step = max(1, _ECE_BLOCK_ELEMENTS // max(w.n_columns, 1))
    for g0 in range(0, len(sums), _ECE_GROUP):
        group = sums[g0 : g0 + _ECE_GROUP]
        rhs = np.concatenate([g for g, _ in group] + [n for _, n in group], axis=1)
        shifts = [np.concatenate([_shrunk_gap_shift(g, n) if shrunk else np.zeros(n_bins)
                                  for g, n in group]) for shrunk in worlds]  # fmt: skip
        half = len(group) * n_bins
        for start in range(0, w.n_replicates, step):
            prod = w.counts[start : start + step].astype(np.float64) @ rhs
            gap, mass = prod[:, :half], prod[:, half:]
            total = mass.reshape(-1, len(group), n_bins).sum(axis=2)
            for i, shift in enumerate(shifts):
                ece = np.abs(gap + shift * mass).reshape(-1, len(group), n_bins).sum(axis=2)
                with np.errstate(invalid="ignore", divide="ignore"):
                    out[i, g0 : g0 + len(group), start : start + step] = np.where(
                        total > 0, ece / total, np.nan
                    ).T
    return out


def _mean_abs_normal(mu: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """``E|mu + sd·Z|`` for standard normal ``Z`` (``|mu|`` where ``sd`` is 0)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(sd > 0, mu / sd, 0.0)
        folded = sd * np.sqrt(2 / np.pi) * np.exp(-(z**2) / 2) + mu * (1 - 2 * ndtr(-z))
    return np.where(sd > 0, folded, np.abs(mu))


def _patient_bin_stats(conf, acc, w: ReplicateWeights, rows, n_bins) -> np.ndarray:
    """Per (weight column, bin) of one ECE column: images, gap sum, its square, gap sum ×
    images and images squared, ``(m, bins · 5)`` (the debiased ECE's per-patient terms)."""
    bins = _bins(conf, n_bins)
    idx = np.arange(len(conf)) if rows is None else np.asarray(rows)
    patients, cell = np.unique(w.inverse[idx] * n_bins + bins, return_inverse=True)
    gap_sum = np.bincount(cell, weights=acc - conf)  # per (patient, bin) present
    n_imgs = np.bincount(cell).astype(np.float64)
    per_patient = np.zeros((w.counts.shape[1], n_bins, 5))
    p_idx, b_idx = np.divmod(patients, n_bins)
    per_patient[p_idx, b_idx] = np.stack(
        [n_imgs, gap_sum, gap_sum**2, gap_sum * n_imgs, n_imgs**2], axis=1
    )
    return per_patient.reshape(len(per_patient), n_bins * 5)


def _debiased_from_sums(sums: np.ndarray) -> np.ndarray:
    """Debiased ECE per leading index of ``sums`` (``(..., bins, 5)`` replicate sums)."""
    mass, gap, g2, gn, n2 = np.moveaxis(sums, -1, 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(mass > 0, gap / mass, 0.0)
        # cluster-robust variance of the bin mean (a patient's images are one cluster)
        var = np.where(mass > 0, (g2 - 2 * mean * gn + mean**2 * n2) / mass**2, 0.0)
        terms = mass * (2 * np.abs(mean) - _mean_abs_normal(mean, np.sqrt(np.maximum(var, 0))))
        total = mass.sum(axis=-1)
        return np.where(total > 0, terms.sum(axis=-1) / total, np.nan)


def _debiased_binned_eces(columns, w: ReplicateWeights, n_bins: int) -> np.ndarray:
    """Debiased ECE (:func:`weighted_debiased_ece`) of each ``(conf, acc, rows)`` column and
    replicate, ``(columns, B)``: the per-patient terms of up to :data:`_ECE_GROUP` columns
    are one right-hand side, multiplied by each block of replicates' weights once."""
    stats = [_patient_bin_stats(conf, acc, w, rows, n_bins) for conf, acc, rows in columns]
    out = np.empty((len(stats), w.n_replicates))
    step = max(1, _ECE_BLOCK_ELEMENTS // max(w.n_columns, 1))
    for g0 in range(0, len(stats), _ECE_GROUP):
        rhs = np.concatenate(stats[g0 : g0 + _ECE_GROUP], axis=1)
        n_group = rhs.shape[1] // (n_bins * 5)
        for start in range(0, w.n_replicates, step):
            prod = w.counts[start : start + step].astype(np.float64) @ rhs
            sums = prod.reshape(len(prod), n_group, n_bins, 5)
            out[g0 : g0 + n_group, start : start + step] = _debiased_from_sums(sums).T
    return out


def _ece_columns(y, prob, task):
    """Per ECE column: (confidence, hit, row indices or None): the top label, or each label's
    labelled rows."""
    if task == "multiclass":
        yield prob.max(axis=1), (prob.argmax(axis=1) == y).astype(float), None
        return
    for j in range(prob.shape[1]):
        m = ~np.isnan(y[:, j])
        if m.any():
            yield prob[m, j], y[m, j], (None if m.all() else np.flatnonzero(m))


def _column_mean(parts: np.ndarray, n_replicates: int) -> np.ndarray:
    """Mean over columns, NaN columns of a replicate left out (NaN without columns)."""
    if not len(parts):
        return np.full(n_replicates, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(parts, axis=0)


def _batched_ece(y, prob, task, w, n_bins, worlds) -> np.ndarray:
    """``(worlds, B)`` ECE in each world of :func:`_binned_eces`."""
    rw = ReplicateWeights.of(w)
    parts = _binned_eces(list(_ece_columns(y, prob, task)), rw, n_bins, worlds)
    if task == "multiclass":
        return parts[:, 0]
    return np.stack([_column_mean(p, rw.n_replicates) for p in parts])


def weighted_ece(
    y: np.ndarray,
    prob: np.ndarray,
    task: str,
    w: np.ndarray | ReplicateWeights,
    n_bins: int = N_BINS,
) -> np.ndarray:
    """ECE (equal-width bins, top-label or mean per-label) for each replicate of ``w``."""
    return _batched_ece(y, prob, task, w, n_bins, (False,))[0]


def weighted_debiased_ece(
    y: np.ndarray,
    prob: np.ndarray,
    task: str,
    w: np.ndarray | ReplicateWeights,
    n_bins: int = N_BINS,
) -> np.ndarray:
    """A debiased estimate of the population binned ECE for each replicate of ``w``.

    The plug-in ECE averages ``|mean gap|`` over bins, and ``E|x̂| > |x|`` for a noisy bin
    mean ``x̂``: it overstates the population ECE on finite test sets. Following Kumar et al.
    (2019, *Verified uncertainty calibration*), each bin's term is corrected by its estimated
    bias under a normal approximation of the bin mean, ``2|x̂| − E|x̂ + s·Z|`` (``s`` the
    bin mean's standard error, cluster-robust over patients), same bins and weights as
    :func:`weighted_ece`. For intervals only: the reported ECE stays the plug-in.
    """
    rw = ReplicateWeights.of(w)
    parts = _debiased_binned_eces(list(_ece_columns(y, prob, task)), rw, n_bins)
    return _column_mean(parts, rw.n_replicates)


def weighted_shrunk_ece(
    y: np.ndarray,
    prob: np.ndarray,
    task: str,
    w: np.ndarray | ReplicateWeights,
    n_bins: int = N_BINS,
) -> np.ndarray:
    """ECE of each replicate of ``w`` in a bootstrap world whose bin gaps are shrunk.

    The plug-in ECE overstates the population ECE most where a bin's true gap is near 0,
    and a bootstrap world built on the observed gaps (rarely near 0) reproduces too little of
    that bias. Here each bin's resampled mean gap is moved by the same amount that takes the
    observed mean gap one standard error towards 0 (to 0 when within one standard error), so
    bins that may be calibrated are calibrated in this world. With all weights 1 it is the
    ECE of the shrunk gaps, the world's own value. Same bins and columns as
    :func:`weighted_ece`; for the ECE interval only
    (:func:`crsbench.stats.intervals.ece_interval`).
    """
    return _batched_ece(y, prob, task, w, n_bins, (True,))[0]


def weighted_ece_and_shrunk(
    y: np.ndarray,
    prob: np.ndarray,
    task: str,
    w: np.ndarray | ReplicateWeights,
    n_bins: int = N_BINS,
) -> np.ndarray:
    """``(B, 2)``: :func:`weighted_ece` and :func:`weighted_shrunk_ece` of each replicate,
    the same values as the two calls, from one pass over the weights."""
    return _batched_ece(y, prob, task, w, n_bins, (False, True)).T
