"""The replicate kernels as they were before the blocked sparse kernels, kept as the
reference the fast ones are tested (``tests/unit/stats/test_stats_replicate_kernels.py``) and
benchmarked (``benchmarks/bootstrap.py``) against. Not used by the pipeline.

AUROC: per block of replicates, the negatives' weights gathered in score order and summed
cumulatively, read at each positive; ECE: two matrix products per label column and block of
replicates.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from crsbench.stats.replicate_auroc import _binary_columns
from crsbench.stats.replicate_weights import ReplicateWeights
from crsbench.stats.weighted_metrics import (
    N_BINS,
    _column_mean,
    _debiased_from_sums,
    _ece_columns,
    _patient_bin_stats,
    _patient_bin_sums,
    _shrunk_gap_shift,
)

_CACHE_ELEMENTS = 1 << 18
_ECE_BLOCK_ELEMENTS = 1 << 20


def _block(w: ReplicateWeights, start: int, size: int) -> np.ndarray:
    rows = w.counts[start : start + size]
    out = np.zeros((rows.shape[0], rows.shape[1] + 1), dtype=w.sum_dtype)
    out[:, :-1] = rows
    return out


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
