"""The compiled replicate AUROC kernel: one pass over a score column for a block of replicates.

A column's rows are visited once in score order; for every replicate of the block at once
(the innermost loop, contiguous, which the compiler vectorises) the larger class's weight
below the current score is kept, and each smaller-class row adds its weight times
``2·below + tied`` (the midrank rule: a tie counts one half, here 1 of 2 units). Integer
weights are summed in integers (exact); the AUROC of a replicate is that sum over
``2·W_min·W_maj``, the same integer sums and the same float64 division as the sorted
cumulative-sum kernel it replaced, hence the same value to the last bit.

The kernel is compiled by numba on first use in a process (about 1 s for each weight type
met; nothing is cached on disk, so a read-only or full disk cannot fail it) and then runs at
about 0.1 ns per row and replicate on one core, 3.6× the blocked sparse-matrix kernel it
replaced (:mod:`crsbench.stats._sparse_auroc`; ``benchmarks/auroc_kernel.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crsbench.stats.jit import LazyKernel


def _auroc_block(cols, minority, tie_start, tie_end, wt, flush_every, cum, tied, w_min, part,
                 num, out):  # fmt: skip
    """AUROC of one column under each replicate of a block (the kernel numba compiles).

    ``cols``: each row's weight column, in score order; ``minority``: 1 where the row is of
    the smaller class; ``tie_start``, ``tie_end``: the runs of two or more equal scores;
    ``wt``: ``(weight columns, replicates)`` weights. ``cum``, ``tied``, ``w_min``: the
    weight sums; ``part``: the midrank sum since it was last added to ``num``, every
    ``flush_every`` rows of the smaller class (never when ``flush_every`` < 1); all
    ``(replicates,)`` work arrays, whose types are the sums'; ``out``: the AUROCs.
    """
    n_rep = wt.shape[1]
    cum[:] = 0
    w_min[:] = 0
    num[:] = 0
    part[:] = 0
    i, t, since = 0, 0, 0
    while i < cols.shape[0]:
        if t < tie_start.shape[0] and i == tie_start[t]:  # a run of equal scores
            end = tie_end[t]
            tied[:] = 0  # the larger class's weight level with this score
            for k in range(i, end):
                if not minority[k]:
                    row = wt[cols[k]]
                    for j in range(n_rep):
                        tied[j] += row[j]
            for k in range(i, end):
                if minority[k]:
                    row = wt[cols[k]]
                    for j in range(n_rep):
                        num[j] += row[j] * (2 * cum[j] + tied[j])
                        w_min[j] += row[j]
            for j in range(n_rep):
                cum[j] += tied[j]
            i, t = end, t + 1
            continue
        row = wt[cols[i]]  # a score of one row: nothing tied with it
        if minority[i]:
            for j in range(n_rep):
                part[j] += row[j] * (2 * cum[j])
                w_min[j] += row[j]
            since += 1
            if since == flush_every:  # before part could overflow its type
                for j in range(n_rep):
                    num[j] += part[j]
                    part[j] = 0
                since = 0
        else:
            for j in range(n_rep):
                cum[j] += row[j]
        i += 1
    for j in range(n_rep):
        num[j] += part[j]
        den = np.float64(w_min[j]) * np.float64(2 * cum[j])
        out[j] = num[j] / den if den > 0 else np.nan


_kernel = LazyKernel(_auroc_block)


@dataclass(frozen=True)
class ColumnOrder:
    """One score column in the order the kernel reads it (built once, read by every block).

    Attributes
    ----------
    cols : numpy.ndarray
        int32, the weight column of each row, rows in ascending score order.
    minority : numpy.ndarray
        uint8, 1 where the row is of the column's smaller class.
    tie_start, tie_end : numpy.ndarray
        int32, the first and one past the last position of each run of two or more equal
        scores (empty for a column without ties).
    """

    cols: np.ndarray
    minority: np.ndarray
    tie_start: np.ndarray
    tie_end: np.ndarray

    @classmethod
    def of(cls, minority: np.ndarray, score: np.ndarray, cols: np.ndarray) -> ColumnOrder:
        """From the smaller class's mask, the scores it is compared on and each row's weight
        column."""
        order = np.argsort(score)  # any order inside a tie: ties are read by value
        s_sorted = score[order]
        new = np.empty(len(score) + 1, dtype=bool)
        new[0] = new[-1] = True
        np.not_equal(s_sorted[1:], s_sorted[:-1], out=new[1:-1])
        bounds = np.flatnonzero(new)
        long = np.flatnonzero(np.diff(bounds) > 1)
        return cls(
            cols[order].astype(np.int32),
            minority[order].astype(np.uint8),
            bounds[long].astype(np.int32),
            bounds[long + 1].astype(np.int32),
        )

    @property
    def nbytes(self) -> int:
        """Bytes held."""
        return sum(a.nbytes for a in (self.cols, self.minority, self.tie_start, self.tie_end))


_INT32_MAX = int(np.iinfo(np.int32).max)


@dataclass(frozen=True)
class SumTypes:
    """The types of the kernel's sums for one column under one block of weights: ``weight``
    (the larger class below and tied, the smaller class's total), ``part`` (the midrank sum
    between two additions to the exact total, every ``flush_every`` smaller-class rows, or
    only at the end when ``flush_every`` is 0) and ``num`` (the total)."""

    weight: type
    part: type
    num: type
    flush_every: int

    @classmethod
    def of(cls, weight_dtype: np.dtype, top: float, n_rows: int) -> SumTypes:
        """For weights of ``weight_dtype`` at most ``top`` on ``n_rows`` rows: float weights
        in float64; integer weights in int32 where every weight sum fits (at most ``top ·
        n_rows``), and each midrank term ``w · (2·below + tied) ≤ 2 · top² · n_rows`` summed
        in int32 as many rows at a time as cannot overflow it, then added up in int64
        (exact)."""
        if np.dtype(weight_dtype).kind == "f":
            return cls(np.float64, np.float64, np.float64, 0)
        top, n_rows = max(int(top), 1), max(int(n_rows), 1)
        if top * n_rows > _INT32_MAX:
            return cls(np.int64, np.int64, np.int64, 0)
        flush = _INT32_MAX // (2 * top * top * n_rows)
        return cls(np.int32, np.int32, np.int64, flush) if flush else cls(
            np.int32, np.int64, np.int64, 0)  # fmt: skip


def block_auroc(column: ColumnOrder, wt: np.ndarray, sums: SumTypes) -> np.ndarray:
    """AUROC of ``column`` under each replicate of ``wt`` (``(weight columns, replicates)``,
    C-contiguous): NaN in a replicate without both classes."""
    n_rep = wt.shape[1]
    work: list[np.ndarray] = [np.empty(n_rep, dtype=sums.weight) for _ in range(3)]
    out = np.empty(n_rep)
    _kernel(column.cols, column.minority, column.tie_start, column.tie_end, wt,
            sums.flush_every, *work, np.empty(n_rep, dtype=sums.part),
            np.empty(n_rep, dtype=sums.num), out)  # fmt: skip
    return out
