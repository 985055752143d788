"""The blocked sparse-matrix replicate AUROC kernel, as it was before the compiled kernel
(:mod:`crsbench.stats.auroc_kernel`) replaced it; kept as a reference the compiled kernel is
tested (``tests/unit/stats/test_stats_replicate_kernels.py``) and benchmarked
(``benchmarks/auroc_kernel.py``) against. Not used by the pipeline.

Twice the weighted Mann–Whitney count of a column is ``Σ_k w_k · (2·below_k + tied_k)`` over
the rows ``k`` of its smaller class. The column is sorted once; the larger class's rows are
summed per *segment* (between consecutive smaller-class scores) for a whole block of
replicates at once, as one sparse-matrix product with the block's transposed patient counts,
and ``2·below + tied`` is a cumulative sum over the segments, taken in ``√``-sized blocks.
Integer counts are summed in integers (int16 partial sums, split where they could overflow).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from crsbench.stats.replicate_auroc import _segments, _smaller_class
from crsbench.stats.replicate_weights import ReplicateWeights

_INT16_MAX = int(np.iinfo(np.int16).max)
#: Python-level steps of the blocked cumulative sum cost about as much as this many
#: element-steps of numpy's cumulative sum along the leading axis (sets the block size).
_STEP_COST = 750
#: Its replicates per block: about this many (row × replicate) elements, 128 to 1,024
#: (measured best for this kernel at 730–30,000 rows).
_BLOCK_ELEMENTS = 1 << 21


def _block_size(w: ReplicateWeights) -> int:
    fit = _BLOCK_ELEMENTS // max(len(w.inverse), 1)
    return int(min(max(1 << max(int(fit).bit_length() - 1, 0), 128), 1024))


def _kernel_dtype(w: ReplicateWeights) -> type:
    """int16 for counts that fit uint8 and sums that fit int32 (partial sums are split to
    fit int16), else the sums' type."""
    if w.counts.dtype == np.uint8 and w.sum_dtype is np.int32:
        return np.int16
    return w.sum_dtype


def _by_column(w: ReplicateWeights, rows: np.ndarray | None) -> np.ndarray:
    """Positions in ``rows`` (all rows when ``None``) ordered by weight column, stably."""
    order = np.argsort(w.inverse, kind="stable")
    if rows is None:
        return order
    local = np.full(len(w.inverse), -1)
    local[np.asarray(rows)] = np.arange(len(rows))
    local = local[order]
    return local[local >= 0]


def _transposed(w: ReplicateWeights, start: int, size: int) -> np.ndarray:
    """Replicates ``start … start + size − 1`` as ``(m + 1, size)``, the last row zero."""
    rows = w.counts[start : start + size]
    out = np.zeros((rows.shape[1] + 1, rows.shape[0]), dtype=_kernel_dtype(w))
    out[:-1] = rows.T
    return out


@dataclass(frozen=True)
class _Plan:
    """One score column's segment sums, shared by every block of replicates.

    Slot ``q`` (the segments in score order, a segment split across slots where its int16
    sum could overflow) is row ``(q % k) · nb + q // k`` of ``matrix``: the first ``k · nb``
    rows reshape to a ``(k, nb)`` grid whose cumulative sum runs down ``k`` (contiguous
    vector steps), then across ``nb``. Those rows hold each larger-class row's units (2, or
    1 + 1 across a tie) in its slot and weight column; the ``extra`` rows after them the
    smaller class's rows (their sum is its weight). ``weight_cols`` is the weight column of
    the smaller-class row read at each slot (``m``, the zero row, where none is).
    """

    matrix: sparse.csc_matrix
    weight_cols: np.ndarray
    k: int
    nb: int


def _grid(q: int, block: int) -> tuple[int, int]:
    """``(k, nb)`` with ``k · nb ≥ q``: ``k`` Python steps against ``nb`` slow ones."""
    k = int(min(max(round(np.sqrt(q * block / _STEP_COST)), 1), q))
    return k, -(-q // k)


def _entries(cols, maj_rows, lo, hi):
    """Larger-class entries (segment, weight column, units) sorted by segment."""
    col = cols[maj_rows]
    tied = lo != hi
    if not tied.any():
        return hi, col, np.full(len(hi), 2)
    # 1 at each end of the tie instead of 2 below it
    seg, col = np.r_[hi, lo[tied]], np.r_[col, col[tied]]
    units = np.r_[np.where(tied, 1, 2), np.ones(int(tied.sum()), dtype=int)]
    by_seg = np.argsort(seg, kind="stable")
    return seg[by_seg], col[by_seg], units[by_seg]


def _slots(per_seg: np.ndarray, seg: np.ndarray, cap: int):
    """Slots per segment (at most ``cap`` entries each), the first slot of each segment and
    each entry's slot (entries sorted by segment)."""
    n_slots = np.maximum(1, -(-per_seg // cap))
    first = np.cumsum(n_slots) - n_slots
    slot = first[seg] + (np.arange(len(seg)) - (np.cumsum(per_seg) - per_seg)[seg]) // cap
    return n_slots, first, slot


def _plan(target, score, w: ReplicateWeights, rows) -> _Plan:
    cols = w.inverse if rows is None else w.inverse[np.asarray(rows)]
    minority, s = _smaller_class(target, score)
    min_rows, maj_rows, lo, hi = _segments(minority, s)
    seg, col, units = _entries(cols, maj_rows, lo, hi)
    n_min = len(min_rows)
    # entries per slot: an int16 slot must hold its sum in every replicate
    cap = (
        max((_INT16_MAX // max(int(np.ceil(w.top)), 1)) // 2, 1)
        if _kernel_dtype(w) is np.int16
        else len(seg)
    )
    cap = max(cap, 1)
    n_slots, first, slot = _slots(np.bincount(seg, minlength=n_min + 1), seg, cap)
    k, nb = _grid(int(n_slots.sum()), _block_size(w))
    grid_row = (slot % k) * nb + slot // k
    # the smaller class's rows, summed in rows of their own after the grid
    extra_row = k * nb + np.arange(n_min) // (2 * cap)
    shape = (k * nb + -(-n_min // (2 * cap)), w.n_columns + 1)
    if len(seg) == len(maj_rows):  # one entry per row: gathered by weight column, no sort
        out_row = np.empty(len(minority), dtype=np.int32)
        out_row[maj_rows], out_row[min_rows] = grid_row, extra_row
        by_col = _by_column(w, rows)
        indptr = np.zeros(shape[1] + 1, dtype=np.int32)
        np.cumsum(np.bincount(cols, minlength=shape[1]), out=indptr[1:])
        data = np.where(minority, 1, 2)[by_col].astype(_kernel_dtype(w))
        matrix = sparse.csc_matrix((data, out_row[by_col], indptr), shape=shape)
    else:
        data = np.r_[units, np.ones(n_min, dtype=int)].astype(_kernel_dtype(w))
        pairs = (np.r_[grid_row, extra_row], np.r_[col, cols[min_rows]])
        matrix = sparse.csc_matrix((data, pairs), shape=shape)
    read = (first + n_slots - 1)[:n_min]
    weight_cols = np.full(k * nb, w.n_columns)
    weight_cols[(read % k) * nb + read // k] = cols[min_rows]
    return _Plan(matrix, weight_cols, k, nb)


def _block_auroc(plan: _Plan, wt: np.ndarray, acc: type) -> np.ndarray:
    """AUROC of one block of replicates (``wt``: transposed weights, zero row last)."""
    size = plan.k * plan.nb
    both = (plan.matrix @ wt).astype(acc, copy=False)
    part = both[:size].reshape(plan.k, plan.nb, -1)
    for i in range(1, plan.k):  # cumulative sum down the grid ...
        np.add(part[i], part[i - 1], out=part[i])
    last = part[-1]
    offset: np.ndarray = np.cumsum(last, axis=0, dtype=acc)  # ... then across it
    total = offset[-1].copy()  # 2 × the larger class's weight
    offset -= last
    part += offset
    w_min: np.ndarray = wt.take(plan.weight_cols, axis=0).astype(acc, copy=False)
    num = np.einsum("qb,qb->b", w_min, both[:size])
    den = both[size:].sum(axis=0, dtype=acc).astype(np.float64) * total.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / den, np.nan)


def sparse_auroc_columns(columns, w: ReplicateWeights) -> np.ndarray:
    """AUROC of each ``(rows, target, score)`` column under every replicate: ``(columns, B)``,
    as :func:`crsbench.stats.replicate_auroc.weighted_auroc_columns` computed it before."""
    w = ReplicateWeights.of(w)
    plans = [_plan(t, s, w, r) for r, t, s in columns]
    acc = np.int32 if _kernel_dtype(w) is np.int16 else _kernel_dtype(w)
    out = np.empty((len(plans), w.n_replicates))
    size = _block_size(w)
    for start in range(0, w.n_replicates, size):
        wt = _transposed(w, start, size)
        for j, plan in enumerate(plans):
            out[j, start : start + size] = _block_auroc(plan, wt, acc)
    return out
