"""Macro-AUROC and ECE of one prediction under many bootstrap weightings at once.

Each replicate is a row of a ``(B, n)`` weight matrix (how many times each test row was
drawn; :class:`ReplicateWeights`). The AUROC kernel is :mod:`crsbench.stats.replicate_auroc`
(one sort per score column, replicates as blocked sparse-matrix work, exact integer sums).
ECE gaps and rows are summed once per (patient, bin); every block of replicates' per-bin sums
are then a compiled pass over those entries (:mod:`crsbench.stats.ece_kernel`). With all
weights 1 the AUROC equals the store's (:func:`crsbench.metrics.macro_auroc`) exactly, the
ECE (:func:`crsbench.metrics.expected_calibration_error`) to float64 rounding.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.special import ndtr

from crsbench.protocol import ECE_BINS
from crsbench.stats.ece_kernel import BinEntries
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
    "weighted_ece_and_debiased",
    "weighted_ece_and_shrunk",
]

N_BINS = ECE_BINS


def _bins(conf: np.ndarray, n_bins: int) -> np.ndarray:
    """Each row's equal-width bin on [0, 1] (the ECE's binning)."""
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    return np.clip(np.searchsorted(edges, conf, side="right") - 1, 0, n_bins - 1)


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


def _entries(conf, acc, w: ReplicateWeights, rows, n_bins, debiased: bool) -> BinEntries:
    """One ECE column's (patient, bin) entries (:class:`BinEntries`)."""
    cols = w.inverse if rows is None else w.inverse[np.asarray(rows)]
    return BinEntries.of(cols, _bins(conf, n_bins), acc - conf, n_bins, debiased)


def _entries_shift(e: BinEntries, n_columns: int) -> np.ndarray:
    """:func:`_shrunk_gap_shift` of a column from its entries."""
    gap, n_rows = np.zeros((n_columns, e.n_bins)), np.zeros((n_columns, e.n_bins))
    gap[e.cols, e.bins], n_rows[e.cols, e.bins] = e.stats[:, 1], e.stats[:, 0]
    return _shrunk_gap_shift(gap, n_rows)


def _binned_eces(columns, w: ReplicateWeights, n_bins: int, worlds=(False,)) -> np.ndarray:
    """ECE of each ``(conf, acc, rows)`` column and replicate in each world, ``(worlds,
    columns, B)``: per bin ``Σ_bins |gap sum| / rows``.

    Each column's rows and gaps are summed per (patient, bin) entry once; each block of
    replicates' per-bin sums are then the compiled kernel's (:class:`BinEntries`). A ``True``
    world (shrunk) moves every bin's mean gap by :func:`_shrunk_gap_shift` (the same shift
    in every replicate); every world reads the same sums, so the plug-in and the shrunk ECE
    cost one pass.
    """
    entries = [_entries(conf, acc, w, rows, n_bins, False) for conf, acc, rows in columns]
    shifts = [[_entries_shift(e, w.n_columns) if shrunk else np.zeros(n_bins) for shrunk in worlds]
              for e in entries]  # fmt: skip
    out = np.empty((len(worlds), len(entries), w.n_replicates))
    size = w.block_size
    for start in range(0, w.n_replicates, size):
        wt = w.transposed(start, size)
        for c, e in enumerate(entries):
            sums = e.sums(wt)
            for i, shift in enumerate(shifts[c]):
                out[i, c, start : start + size] = _plug_in_from_sums(sums, shift)
    return out


def _plug_in_from_sums(sums: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """Plug-in ECE per replicate from ``(bins, sums, replicates)`` per-bin sums (rows, gap
    sum first): ``Σ_bins |gap sum + shift · rows| / rows``, ``shift`` per bin (0: as drawn)."""
    mass, gap = sums[:, 0], sums[:, 1]
    total = mass.sum(axis=0)
    ece = np.abs(gap + shift[:, None] * mass).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, ece / total, np.nan)


def _mean_abs_normal(mu: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """``E|mu + sd·Z|`` for standard normal ``Z`` (``|mu|`` where ``sd`` is 0)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(sd > 0, mu / sd, 0.0)
        folded = sd * np.sqrt(2 / np.pi) * np.exp(-(z**2) / 2) + mu * (1 - 2 * ndtr(-z))
    return np.where(sd > 0, folded, np.abs(mu))


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
    """Plug-in and debiased ECE (:func:`weighted_debiased_ece`) of each ``(conf, acc, rows)``
    column and replicate, ``(2, columns, B)``: each column's per-patient terms summed per
    (patient, bin) entry once, then each block of replicates' per-bin sums by the compiled
    kernel; the plug-in ECE reads the first two of the same sums (the same values as
    :func:`_binned_eces`, whose kernel sums them alike)."""
    entries = [_entries(conf, acc, w, rows, n_bins, True) for conf, acc, rows in columns]
    out = np.empty((2, len(entries), w.n_replicates))
    size = w.block_size
    for start in range(0, w.n_replicates, size):
        wt = w.transposed(start, size)
        for c, e in enumerate(entries):
            sums = e.sums(wt)
            out[0, c, start : start + size] = _plug_in_from_sums(sums, np.zeros(n_bins))
            out[1, c, start : start + size] = _debiased_from_sums(sums.transpose(2, 0, 1))
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
    return weighted_ece_and_debiased(y, prob, task, w, n_bins)[1]


def weighted_ece_and_debiased(
    y: np.ndarray,
    prob: np.ndarray,
    task: str,
    w: np.ndarray | ReplicateWeights,
    n_bins: int = N_BINS,
) -> np.ndarray:
    """``(2, B)``: :func:`weighted_ece` and :func:`weighted_debiased_ece` of each replicate,
    the same values as the two calls, from one pass over the weights (the debiased ECE's
    per-bin sums hold the plug-in's)."""
    rw = ReplicateWeights.of(w)
    parts = _debiased_binned_eces(list(_ece_columns(y, prob, task)), rw, n_bins)
    if task == "multiclass":
        return parts[:, 0]
    return np.stack([_column_mean(p, rw.n_replicates) for p in parts])


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
