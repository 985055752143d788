"""The replicate kernels as they were before the blocked sparse kernels, kept as the
reference the fast ones are tested (``tests/unit/stats/test_stats_replicate_kernels.py``) and
benchmarked (``benchmarks/bootstrap.py``) against. Not used by the pipeline.

AUROC: per block of replicates, the negatives' weights gathered in score order and summed
cumulatively, read at each positive; ECE: two matrix products per label column and block of
replicates, and (``grouped_*``, benchmarked in ``benchmarks/auroc_kernel.py``) the matrix
products of up to 8 columns at once that the compiled per-(patient, bin) sums replaced.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from crsbench.stats.replicate_auroc import _binary_columns
from crsbench.stats.replicate_weights import ReplicateWeights
from crsbench.stats.weighted_metrics import (
    N_BINS,
    _bins,
    _column_mean,
    _debiased_from_sums,
    _ece_columns,
    _shrunk_gap_shift,
)

_CACHE_ELEMENTS = 1 << 18
_ECE_BLOCK_ELEMENTS = 1 << 20
_ECE_GROUP = 8


def _block(w: ReplicateWeights, start: int, size: int) -> np.ndarray:
    rows = w.counts[start : start + size]
    out = np.zeros((rows.shape[0], rows.shape[1] + 1), dtype=w.sum_dtype)
    out[:, :-1] = rows
    return out


def _patient_bin_sums(conf, acc, w: ReplicateWeights, rows, n_bins):
    """Per (weight column, bin): the summed gaps ``acc − conf`` and the rows, ``(m, bins)``."""
    cols = w.inverse if rows is None else w.inverse[np.asarray(rows)]
    size = w.counts.shape[1] * n_bins
    cell = cols * n_bins + _bins(conf, n_bins)
    gap = np.bincount(cell, weights=acc - conf, minlength=size).reshape(-1, n_bins)
    n_rows = np.bincount(cell, minlength=size).reshape(-1, n_bins).astype(np.float64)
    return gap, n_rows


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


@dataclass(frozen=True)
class _ColumnOrder:
    gather: np.ndarray
    pos_cols: np.ndarray
    below: np.ndarray
    upto: np.ndarray | None

    @classmethod
    def of(cls, target, score, w: ReplicateWeights, rows) -> _ColumnOrder:
        idx = np.arange(len(target)) if rows is None else np.asarray(rows)
        pos = np.asarray(target).astype(bool)
        neg_local = np.flatnonzero(~pos)
        neg_local = neg_local[np.argsort(score[neg_local])]
        neg_scores, pos_scores = score[neg_local], score[pos]
        below = np.searchsorted(neg_scores, pos_scores, side="left")
        upto = np.searchsorted(neg_scores, pos_scores, side="right")
        zero_col = w.counts.shape[1]
        gather = np.r_[zero_col, w.inverse[idx[neg_local]]]
        ties = not np.array_equal(below, upto)
        return cls(gather, w.inverse[idx[pos]], below, upto if ties else None)


def _sorted_auroc(block: np.ndarray, order: _ColumnOrder) -> np.ndarray:
    cum = block.take(order.gather, axis=1)
    np.cumsum(cum, axis=1, out=cum)
    below = cum.take(order.below, axis=1)
    halves = 1.0 if order.upto is None else 2.0
    if order.upto is not None:
        below += cum.take(order.upto, axis=1)
    w_pos = block.take(order.pos_cols, axis=1)
    num = np.einsum("bi,bi->b", below, w_pos)
    den = halves * w_pos.sum(axis=1, dtype=np.float64) * cum[:, -1].astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / den, np.nan)


def reference_auroc_column(target, score, w, rows=None) -> np.ndarray:
    """The previous ``weighted_auroc_column``."""
    w = ReplicateWeights.of(w)
    order = _ColumnOrder.of(target, score, w, rows)
    step = max(8, _CACHE_ELEMENTS // len(order.gather))
    out = np.empty(w.n_replicates)
    for start in range(0, w.n_replicates, step):
        out[start : start + step] = _sorted_auroc(_block(w, start, step), order)
    return out


def reference_macro_auroc(y, prob, task, w) -> np.ndarray:
    """The previous ``weighted_macro_auroc``."""
    rw = ReplicateWeights.of(w)
    total = np.zeros(rw.n_replicates)
    n = np.zeros(rw.n_replicates)
    for rows, target, score in _binary_columns(y, prob, task):
        auc = reference_auroc_column(target, score, rw, rows)
        ok = np.isfinite(auc)
        total += np.where(ok, auc, 0.0)
        n += ok
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, total / n, np.nan)


def _binned_ece(conf, acc, w: ReplicateWeights, rows, n_bins, shrunk: bool = False):
    gap, n_rows = _patient_bin_sums(conf, acc, w, rows, n_bins)
    shift = _shrunk_gap_shift(gap, n_rows) if shrunk else np.zeros(n_bins)
    step = max(1, _ECE_BLOCK_ELEMENTS // max(gap.shape[0], 1))
    out = np.empty(w.n_replicates)
    for start in range(0, w.n_replicates, step):
        block = w.counts[start : start + step].astype(np.float64)
        mass = block @ n_rows
        total = mass.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            ece = np.abs(block @ gap + shift * mass).sum(axis=1) / total
        out[start : start + step] = np.where(total > 0, ece, np.nan)
    return out


def reference_ece(y, prob, task, w, n_bins: int = N_BINS, shrunk: bool = False) -> np.ndarray:
    """The previous ``weighted_ece`` (``shrunk``: ``weighted_shrunk_ece``)."""
    rw = ReplicateWeights.of(w)
    if task == "multiclass":
        conf = prob.max(axis=1)
        acc = (prob.argmax(axis=1) == y).astype(float)
        return _binned_ece(conf, acc, rw, None, n_bins, shrunk)
    parts = []
    for j in range(prob.shape[1]):
        m = ~np.isnan(y[:, j])
        if m.any():
            rows = None if m.all() else np.flatnonzero(m)
            parts.append(_binned_ece(prob[m, j], y[m, j], rw, rows, n_bins, shrunk))
    if not parts:
        return np.full(rw.n_replicates, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(np.stack(parts), axis=0)


def reference_shrunk_ece(y, prob, task, w, n_bins: int = N_BINS) -> np.ndarray:
    """The previous ``weighted_shrunk_ece``."""
    return reference_ece(y, prob, task, w, n_bins, shrunk=True)


def reference_ece_and_shrunk(y, prob, task, w, n_bins: int = N_BINS) -> np.ndarray:
    """The previous ``weighted_ece`` and ``weighted_shrunk_ece``, two passes, ``(B, 2)``."""
    return np.stack(
        [reference_ece(y, prob, task, w, n_bins), reference_shrunk_ece(y, prob, task, w, n_bins)],
        axis=1,
    )


def reference_two_pass_replicates(cell, ids, seed_counts, seed=0, chunk=1_000):
    """The previous ``cell_replicates``: per chunk the axes, then the shrunk ECE on resample
    counts drawn again (the test and the benchmark compare the one-pass version with it)."""
    from crsbench.stats.cell_axes import (
        cell_replicate_axes,
        cell_shrunk_ece,
        seed_mean,
        seed_resampled_axes,
    )

    axes, shrunk, extras = [], [], []
    for start in range(0, len(ids), chunk):
        block, sc = ids[start : start + chunk], seed_counts[start : start + chunk]
        more: dict[str, np.ndarray] = {}
        axes.append(seed_resampled_axes(cell_replicate_axes(cell, block, seed, more), sc))
        shrunk.append(seed_mean(cell_shrunk_ece(cell, block, seed), sc))
        extras.append({k: seed_mean(v, sc) for k, v in more.items()})
    joined = {k: np.concatenate([e[k] for e in extras]) for k in extras[0]}
    return np.concatenate(axes), np.concatenate(shrunk), joined


def _debiased_column(conf, acc, w: ReplicateWeights, rows, n_bins) -> np.ndarray:
    """One column's debiased ECE per replicate: one product with every replicate's weights
    converted to float64 at once."""
    per_patient = _patient_bin_stats(conf, acc, w, rows, n_bins).reshape(-1, n_bins, 5)
    sums = np.tensordot(w.counts.astype(np.float64), per_patient, axes=(1, 0))  # (B, bins, 5)
    return _debiased_from_sums(sums)


def reference_debiased_ece(y, prob, task, w, n_bins: int = N_BINS) -> np.ndarray:
    """The debiased ECE as it was before the columns shared their products: one tensor
    product per label column over all replicates."""
    rw = ReplicateWeights.of(w)
    parts = [_debiased_column(c, a, rw, r, n_bins) for c, a, r in _ece_columns(y, prob, task)]
    return _column_mean(np.array(parts), rw.n_replicates)


# The ECE as it was before the compiled per-(patient, bin) sums (issue #31): up to 8 label
# columns per matrix product of the replicates' counts with every (bin, sum) column.


def _grouped_binned_eces(columns, w: ReplicateWeights, n_bins: int, worlds=(False,)) -> np.ndarray:
    """ECE of each ``(conf, acc, rows)`` column and replicate in each world, ``(worlds,
    columns, B)``: per bin ``Σ_bins |gap sum| / rows``.

    The gaps and rows are first summed per (weight column, bin); each replicate's per-bin sums
    of up to 8 columns are then one matrix product with its weights, in
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


def _grouped_debiased_eces(columns, w: ReplicateWeights, n_bins: int) -> np.ndarray:
    """Debiased ECE (:func:`weighted_debiased_ece`) of each ``(conf, acc, rows)`` column and
    replicate, ``(columns, B)``: the per-patient terms of up to 8 columns
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


def grouped_ece(y, prob, task, w, worlds=(False,), n_bins: int = N_BINS) -> np.ndarray:
    """The previous ``weighted_ece`` (``worlds=(True,)``: ``weighted_shrunk_ece``), ``(worlds,
    B)``."""
    rw = ReplicateWeights.of(w)
    parts = _grouped_binned_eces(list(_ece_columns(y, prob, task)), rw, n_bins, worlds)
    if task == "multiclass":
        return parts[:, 0]
    return np.stack([_column_mean(p, rw.n_replicates) for p in parts])


def grouped_debiased_ece(y, prob, task, w, n_bins: int = N_BINS) -> np.ndarray:
    """The previous ``weighted_debiased_ece``."""
    rw = ReplicateWeights.of(w)
    parts = _grouped_debiased_eces(list(_ece_columns(y, prob, task)), rw, n_bins)
    return _column_mean(parts, rw.n_replicates)
