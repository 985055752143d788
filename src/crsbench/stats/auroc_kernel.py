"""The compiled replicate AUROC kernel: one pass over a score column for a block of replicates.

A column's rows are visited once in score order; for every replicate of the block at once
(the innermost loop, contiguous, which the compiler vectorises) the larger class's weight
below the current score is kept, and each smaller-class row adds its weight times
``2·below + tied`` (the midrank rule: a tie counts one half, here 1 of 2 units). Integer
weights are summed in integers (exact); the AUROC of a replicate is that sum over
``2·W_min·W_maj``, the same integer sums and the same float64 division as the sorted
cumulative-sum kernel it replaced, hence the same value to the last bit.

Four untied rows of one class in a row are read in one pass over the block (their integer
weights summed first: the larger class's added to the running sum at once, the smaller class's
multiplied by it at once), which reads each running sum a quarter as often; single rows, runs
of ties and float weights are read a row at a time.

The kernel is compiled by numba on first use in a process (about 1 s for each weight type
met; nothing is cached on disk, so a read-only or full disk cannot fail it) and then runs at
about 0.07 ns per row and replicate on one core: 1.4× reading one row a pass
(``benchmarks/rows_per_pass.py``), which was 3.6× the blocked sparse-matrix kernel it
replaced (:mod:`crsbench.stats._sparse_auroc`; ``benchmarks/auroc_kernel.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crsbench.core.jit import LazyKernel


def _auroc_block(cols, minority, tie_start, tie_end, wt, flush_every, batch, cum, tied, w_min,
                 part, num, out):  # fmt: skip
    """AUROC of one column under each replicate of a block (the kernel numba compiles).

    ``cols``: each row's weight column, in score order; ``minority``: 1 where the row is of
    the smaller class; ``tie_start``, ``tie_end``: the runs of two or more equal scores;
    ``wt``: ``(weight columns, replicates)`` weights. ``batch``: 4 to read four untied rows of
    one class in one pass (their weights summed first: integer weights only, whose sums are
    exact in any order), 1 to read one row a pass. ``cum``, ``tied``, ``w_min``: the weight
    sums; ``part``: the midrank sum since it was last added to ``num``, which happens before
    it would hold more than ``flush_every`` rows of the smaller class (never when
    ``flush_every`` < 1); all ``(replicates,)`` work arrays, whose types are the sums';
    ``out``: the AUROCs.
    """
    n_rep, n = wt.shape[1], cols.shape[0]
    cum[:] = 0
    w_min[:] = 0
    num[:] = 0
    part[:] = 0
    four_min = batch == 4 and (flush_every < 1 or flush_every >= 4)
    i, t, since = 0, 0, 0
    while i < n:
        stop = tie_start[t] if t < tie_start.shape[0] else n
        if i == stop:  # a run of equal scores
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
        kind = minority[i]
        k = 1  # rows of one class read in this pass (four, or one)
        if batch == 4 and i + 4 <= stop and (four_min or not kind):
            if minority[i + 1] == kind and minority[i + 2] == kind and minority[i + 3] == kind:
                k = 4
        if kind and flush_every > 0 and since + k > flush_every:  # part could overflow
            for j in range(n_rep):
                num[j] += part[j]
                part[j] = 0
            since = 0
        if k == 4:
            r0, r1, r2, r3 = wt[cols[i]], wt[cols[i + 1]], wt[cols[i + 2]], wt[cols[i + 3]]
            if kind:
                for j in range(n_rep):
                    w4 = r0[j] + r1[j] + r2[j] + r3[j]
                    part[j] += w4 * (2 * cum[j])
                    w_min[j] += w4
            else:
                for j in range(n_rep):
                    cum[j] += r0[j] + r1[j] + r2[j] + r3[j]
        else:
            row = wt[cols[i]]  # a score of one row: nothing tied with it
            if kind:
                for j in range(n_rep):
                    part[j] += row[j] * (2 * cum[j])
                    w_min[j] += row[j]
            else:
                for j in range(n_rep):
                    cum[j] += row[j]
        since += k if kind else 0
        i += k
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


def block_auroc(
    column: ColumnOrder, wt: np.ndarray, sums: SumTypes, rows_per_pass: int | None = None
) -> np.ndarray:
    """AUROC of ``column`` under each replicate of ``wt`` (``(weight columns, replicates)``,
    C-contiguous): NaN in a replicate without both classes.

    ``rows_per_pass``: 4 (the default for integer weights) reads four untied rows of one
    class per pass over the block, 1 one row a pass (float weights always: their sums
    depend on the order); the values are the same to the last bit
    (``benchmarks/rows_per_pass.py`` times both).
    """
    if rows_per_pass is None:
        rows_per_pass = 1 if wt.dtype.kind == "f" else 4
    if rows_per_pass not in (1, 4) or (rows_per_pass == 4 and wt.dtype.kind == "f"):
        raise ValueError(
            f"rows_per_pass must be 1, or 4 with integer weights. Got {rows_per_pass}."
        )
    n_rep = wt.shape[1]
    work: list[np.ndarray] = [np.empty(n_rep, dtype=sums.weight) for _ in range(3)]
    out = np.empty(n_rep)
    _kernel(column.cols, column.minority, column.tie_start, column.tie_end, wt,
            sums.flush_every, rows_per_pass, *work, np.empty(n_rep, dtype=sums.part),
            np.empty(n_rep, dtype=sums.num), out)  # fmt: skip
    return out
