"""AUROC of score columns under many bootstrap weightings at once (the replicate kernel).

Each replicate is a row of a ``(B, n)`` weight matrix (:class:`ReplicateWeights`). Twice the
weighted Mann–Whitney count of a column is ``Σ_k w_k · (2·below_k + tied_k)`` over the rows
``k`` of its smaller class, where ``below_k`` and ``tied_k`` are the weighted rows of the
larger class strictly below and level with row ``k``'s score (the midrank rule). The column
is sorted once; the larger class's rows are then summed per *segment* (between consecutive
smaller-class scores) for a whole block of replicates at once, as one sparse-matrix product
with the block's transposed patient counts, and ``2·below + tied`` is a cumulative sum over
the segments, taken in ``√``-sized blocks so that every step is a vector operation across
segments and replicates. Only the smaller class is scanned, and no step is a Python loop over
replicates or rows. Integer counts are summed in integers (exact; int16 partial sums, split
where they could overflow); other weights in float64. With integer weights the result is
bit-identical to the sorted cumulative-sum kernel it replaced (kept in
:mod:`crsbench.stats._reference_kernels`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from crsbench.stats.replicate_weights import ReplicateWeights

_INT16_MAX = int(np.iinfo(np.int16).max)
#: Python-level steps of the blocked cumulative sum cost about as much as this many
#: element-steps of numpy's cumulative sum along the leading axis (sets the block size).
_STEP_COST = 750


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


def _segments(minority: np.ndarray, s: np.ndarray):
    """Sorted smaller-class rows and, per larger-class row in score order, the smaller-class
    rows below it (``lo``: scores strictly below; ``hi``: at most its score)."""
    order = np.argsort(s)  # any order inside a tie: ties are read by value
    s_sorted, is_min = s[order], minority[order]
    if not len(s):
        empty = np.zeros(0, dtype=np.intp)
        return empty, empty, empty, empty
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    np.not_equal(s_sorted[1:], s_sorted[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    before = np.cumsum(is_min) - is_min
    if len(starts) == len(s):  # no ties at all
        lo = before[~is_min]
        return order[is_min], order[~is_min], lo, lo
    group = np.cumsum(new) - 1
    level = np.add.reduceat(is_min.astype(np.intp), starts)
    g = group[~is_min]
    lo = before[starts][g]
    return order[is_min], order[~is_min], lo, lo + level[g]


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


def _signed(score) -> np.ndarray:
    """``score`` in a type whose negation keeps its order: unsigned integers and booleans
    (whose ``-s`` wraps around or fails) as int64, anything else as it is."""
    s = np.asarray(score)
    return s.astype(np.int64) if s.dtype.kind in "ub" else s


def _smaller_class(target, score) -> tuple[np.ndarray, np.ndarray]:
    """The rows of the column's smaller class and the scores to compare (compared only:
    sorted in their own type), flipped when the positives are the majority:
    AUROC(y, s) = AUROC(1 − y, −s), with the same integer sums."""
    minority, s = np.asarray(target).astype(bool), _signed(score)
    if 2 * int(minority.sum()) > len(minority):
        return ~minority, -s
    return minority, s


def _plan(target, score, w: ReplicateWeights, rows) -> _Plan:
    cols = w.inverse if rows is None else w.inverse[np.asarray(rows)]
    minority, s = _smaller_class(target, score)
    min_rows, maj_rows, lo, hi = _segments(minority, s)
    seg, col, units = _entries(cols, maj_rows, lo, hi)
    n_min = len(min_rows)
    # entries per slot: an int16 slot must hold its sum in every replicate
    cap = max((_INT16_MAX // max(w.top, 1)) // 2, 1) if w.kernel_dtype is np.int16 else len(seg)
    cap = max(cap, 1)
    n_slots, first, slot = _slots(np.bincount(seg, minlength=n_min + 1), seg, cap)
    k, nb = _grid(int(n_slots.sum()), w.block_size)
    grid_row = (slot % k) * nb + slot // k
    # the smaller class's rows, summed in rows of their own after the grid
    extra_row = k * nb + np.arange(n_min) // (2 * cap)
    shape = (k * nb + -(-n_min // (2 * cap)), w.n_columns + 1)
    if len(seg) == len(maj_rows):  # one entry per row: gathered by weight column, no sort
        out_row = np.empty(len(minority), dtype=np.int32)
        out_row[maj_rows], out_row[min_rows] = grid_row, extra_row
        by_col = w.by_column(rows)
        indptr = np.zeros(shape[1] + 1, dtype=np.int32)
        np.cumsum(np.bincount(cols, minlength=shape[1]), out=indptr[1:])
        data = np.where(minority, 1, 2)[by_col].astype(w.kernel_dtype)
        matrix = sparse.csc_matrix((data, out_row[by_col], indptr), shape=shape)
    else:
        data = np.r_[units, np.ones(n_min, dtype=int)].astype(w.kernel_dtype)
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
    offset = np.cumsum(last, axis=0, dtype=acc)  # ... then across it
    total = offset[-1].copy()  # 2 × the larger class's weight
    offset -= last
    part += offset
    w_min = wt.take(plan.weight_cols, axis=0).astype(acc, copy=False)
    num = np.einsum("qb,qb->b", w_min, both[:size])
    den = both[size:].sum(axis=0, dtype=acc).astype(np.float64) * total.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / den, np.nan)


def weighted_auroc_columns(
    columns: list[tuple[np.ndarray | None, np.ndarray, np.ndarray]], w: ReplicateWeights
) -> np.ndarray:
    """AUROC of each ``(rows, target, score)`` column under every replicate: ``(columns, B)``.

    ``rows`` are the rows of ``w`` a column's ``target`` and ``score`` belong to (all when
    ``None``). NaN in a replicate without both classes. Each column is sorted once; the
    replicates are evaluated in blocks (:attr:`ReplicateWeights.block_size`), every column of
    a block reading the same transposed weights.
    """
    if _unit(w):  # the point estimate: one replicate, every row once
        for r, t, s in columns:
            n = len(w.inverse) if r is None else len(r)
            if len(t) != n or len(s) != n:
                raise IndexError(f"a column has {len(t)} targets and {len(s)} scores for {n} rows")
        return np.array([[_unit_auroc(t, s)] for _, t, s in columns]).reshape(len(columns), 1)
    plans = [_plan(t, s, w, r) for r, t, s in columns]
    acc = np.int32 if w.kernel_dtype is np.int16 else w.kernel_dtype
    out = np.empty((len(plans), w.n_replicates))
    size = w.block_size
    for start in range(0, w.n_replicates, size):
        wt = w.transposed(start, size)
        for j, plan in enumerate(plans):
            out[j, start : start + size] = _block_auroc(plan, wt, acc)
    return out


def _unit(w: ReplicateWeights) -> bool:
    """One replicate in which every row weighs 1 (the test set as drawn)."""
    c = w.counts
    return c.shape[0] == 1 and c.size > 0 and c.dtype != np.float64 and bool((c == 1).all())


def _unit_auroc(target, score) -> float:
    """The AUROC of one column with every row weighing 1: the same integer sums as
    :func:`_block_auroc` (the smaller class's midranks against the larger class, exact), so
    the same value to the last bit, without building the replicate plan."""
    minority, s = _smaller_class(target, score)
    _, maj_rows, lo, hi = _segments(minority, s)
    n_min, n_maj = int(minority.sum()), len(maj_rows)
    if n_min == 0 or n_maj == 0:
        return float("nan")
    # smaller-class rows above each larger-class row, twice, plus those level with it
    num = 2 * n_min * n_maj - int(lo.sum(dtype=np.int64)) - int(hi.sum(dtype=np.int64))
    return num / float(2 * n_min * n_maj)


def weighted_auroc_column(
    target: np.ndarray, score: np.ndarray, w: ReplicateWeights, rows: np.ndarray | None = None
) -> np.ndarray:
    """AUROC of one score column under every replicate: shape ``(B,)``.

    ``rows`` are the test rows of ``w`` that ``target`` and ``score`` belong to (all when
    ``None``). NaN in a replicate without both classes.
    """
    return weighted_auroc_columns([(rows, target, score)], ReplicateWeights.of(w))[0]


def _binary_columns(y: np.ndarray, prob: np.ndarray, task: str):
    """Per column: (row indices or None, 0/1 target, score) as the macro AUROC defines them."""
    if task == "multiclass":
        for k in range(prob.shape[1]):
            yield None, (y == k).astype(float), prob[:, k]
        return
    for j in range(prob.shape[1]):
        m = ~np.isnan(y[:, j])
        if m.any():
            yield (None if m.all() else np.flatnonzero(m)), y[m, j], prob[m, j]


def weighted_macro_auroc(
    y: np.ndarray, prob: np.ndarray, task: str, w: np.ndarray | ReplicateWeights
) -> np.ndarray:
    """Macro AUROC for each replicate of ``w`` (shape ``(B,)``).

    ``w`` is a ``(B, n)`` weight matrix or a :class:`ReplicateWeights` (faster when reused).
    A column without both classes in a replicate is left out of that replicate's mean, as
    :func:`crsbench.metrics.macro_auroc` leaves it out of the point estimate; NaN when every
    column is left out.
    """
    rw = ReplicateWeights.of(w)
    total = np.zeros(rw.n_replicates)
    n = np.zeros(rw.n_replicates)
    for auc in weighted_auroc_columns(list(_binary_columns(y, prob, task)), rw):
        ok = np.isfinite(auc)
        total += np.where(ok, auc, 0.0)
        n += ok
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, total / n, np.nan)
