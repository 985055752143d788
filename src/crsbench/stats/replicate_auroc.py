"""AUROC of score columns under many bootstrap weightings at once (the replicate kernel).

Each replicate is a row of a ``(B, n)`` weight matrix (:class:`ReplicateWeights`). Twice the
weighted Mann–Whitney count of a column is ``Σ_k w_k · (2·below_k + tied_k)`` over the rows
``k`` of its smaller class, where ``below_k`` and ``tied_k`` are the weighted rows of the
larger class strictly below and level with row ``k``'s score (the midrank rule). Each column
is sorted once; the compiled kernel (:mod:`crsbench.stats.auroc_kernel`) then reads it once
per block of replicates, every replicate of the block in its innermost loop. Integer counts
are summed exactly in integers; other weights in float64. With integer weights the result is
bit-identical to the kernels it replaced (kept in :mod:`crsbench.stats._reference_kernels`
and :mod:`crsbench.stats._sparse_auroc`).
"""

from __future__ import annotations

import numpy as np

from crsbench.stats.auroc_kernel import ColumnOrder, SumTypes, block_auroc
from crsbench.stats.replicate_weights import ReplicateWeights


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


def weighted_auroc_columns(
    columns: list[tuple[np.ndarray | None, np.ndarray, np.ndarray]],
    w: ReplicateWeights,
    orders: list[ColumnOrder] | None = None,
    rows_per_pass: int | None = None,
) -> np.ndarray:
    """AUROC of each ``(rows, target, score)`` column under every replicate: ``(columns, B)``.

    ``rows`` are the rows of ``w`` a column's ``target`` and ``score`` belong to (all when
    ``None``). NaN in a replicate without both classes. Each column is sorted once (or its
    ``orders`` given, as :class:`ColumnOrders` keeps them); the replicates are evaluated in
    blocks (:attr:`ReplicateWeights.block_size`), every column of a block reading the same
    transposed weights. ``rows_per_pass``: the kernel's (:func:`block_auroc`; the same
    values for 1 and 4).
    """
    if _unit(w):  # the point estimate: one replicate, every row once
        for r, t, s in columns:
            n = len(w.inverse) if r is None else len(r)
            if len(t) != n or len(s) != n:
                raise IndexError(f"a column has {len(t)} targets and {len(s)} scores for {n} rows")
        return np.array([[_unit_auroc(t, s)] for _, t, s in columns]).reshape(len(columns), 1)
    if orders is None:
        orders = [_column_order(t, s, w, r) for r, t, s in columns]
    sums = [SumTypes.of(w.counts.dtype, w.top, len(order.cols)) for order in orders]
    out = np.empty((len(orders), w.n_replicates))
    size = w.block_size
    for start in range(0, w.n_replicates, size):
        wt = w.transposed(start, size)
        for j, order in enumerate(orders):
            out[j, start : start + size] = block_auroc(order, wt, sums[j], rows_per_pass)
    return out


class ColumnOrders:
    """The sorted score columns of one cell's predictions, kept for every chunk of replicates.

    A chunked bootstrap evaluates the same predictions under each chunk's weights; a column's
    order depends on its targets, scores and the split's patients only, so it is sorted once.
    An entry is found by the memory of the label and probability arrays (address, shape,
    strides, type) and holds those arrays, so no other array can take their memory while the
    cache lives; the split's patient columns are compared on every hit. Keep one for the
    duration of one cell's work: it holds about 5 bytes per row and column evaluated.
    """

    def __init__(self) -> None:
        self._entries: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray, list]] = {}

    def of(self, y: np.ndarray, prob: np.ndarray, task: str, w: ReplicateWeights, columns):
        """The orders of ``columns`` (:func:`_binary_columns` of ``y``, ``prob``, ``task``)."""
        key = (_memory(y), _memory(prob), task)
        found = self._entries.get(key)
        if found is None or not np.array_equal(found[2], w.inverse):
            orders = [_column_order(t, s, w, r) for r, t, s in columns]
            found = (y, prob, w.inverse, orders)
            self._entries[key] = found
        return found[3]

    @property
    def nbytes(self) -> int:
        """Bytes held by the orders."""
        return sum(o.nbytes for *_, orders in self._entries.values() for o in orders)


def _memory(a: np.ndarray) -> tuple:
    info = a.__array_interface__
    return (info["data"][0], a.shape, info["strides"], a.dtype.str)


def _column_order(target, score, w: ReplicateWeights, rows) -> ColumnOrder:
    """One column as the kernel reads it: its smaller class, in score order, by weight column."""
    cols = w.inverse if rows is None else w.inverse[np.asarray(rows)]
    if len(target) != len(cols) or len(score) != len(cols):
        raise IndexError(f"a column has {len(target)} targets and {len(score)} scores for "
                         f"{len(cols)} rows")  # fmt: skip
    minority, s = _smaller_class(target, score)
    return ColumnOrder.of(minority, s, cols)


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
    y: np.ndarray,
    prob: np.ndarray,
    task: str,
    w: np.ndarray | ReplicateWeights,
    orders: ColumnOrders | None = None,
) -> np.ndarray:
    """Macro AUROC for each replicate of ``w`` (shape ``(B,)``).

    ``w`` is a ``(B, n)`` weight matrix or a :class:`ReplicateWeights` (faster when reused).
    A column without both classes in a replicate is left out of that replicate's mean, as
    :func:`crsbench.metrics.macro_auroc` leaves it out of the point estimate; NaN when every
    column is left out. ``orders`` keeps the sorted columns for the next chunk of replicates.
    """
    rw = ReplicateWeights.of(w)
    total = np.zeros(rw.n_replicates)
    n = np.zeros(rw.n_replicates)
    columns = list(_binary_columns(y, prob, task))
    kept = None if orders is None or _unit(rw) else orders.of(y, prob, task, rw, columns)
    for auc in weighted_auroc_columns(columns, rw, kept):
        ok = np.isfinite(auc)
        total += np.where(ok, auc, 0.0)
        n += ok
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, total / n, np.nan)
