"""Per-bin sums of an ECE column under a block of bootstrap replicates, compiled (numba).

A label column's rows fall in a patient's few bins (of 15): the column is held as its
(patient, bin) entries, each with its sums over the patient's rows of that bin (rows, gap
sum, and for the debiased ECE the gap sum's square, the gap sum × rows and the rows' square).
A replicate's per-bin sums are then the entries' sums weighted by their patient's count in
the replicate; the kernel adds them for a whole block of replicates, every replicate in the
innermost loop, touching only the entries there are (about one per row) where a matrix
product of the patients' counts with every (bin, sum) column touches every patient's 15 bins.
The entries are sorted by bin and added four at a time, so a bin's sums are read and written a
quarter as often (``benchmarks/rows_per_pass.py``).
Float64 sums: equal to the matrix product's to float64 rounding (tested against it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crsbench.core.jit import LazyKernel


def _bin_sums(cols, bins, stats, wt, per_pass, count, out):
    """``out[bin, k, j]`` = Σ over entries ``e`` in ``bin`` of ``wt[cols[e], j] · stats[e, k]``
    (the kernel numba compiles; entries sorted by bin; ``count``: ``(4, replicates)`` float64
    work rows; ``out`` is ``(bins, sums, replicates)``). With ``per_pass`` 4, four entries of
    one bin are added in one pass over the bin's sums (one at a time where fewer are left);
    with 1, every entry in its own pass."""
    n_rep, n = wt.shape[1], cols.shape[0]
    out[:] = 0.0
    e = 0
    while e < n:
        into = out[bins[e]]
        if per_pass == 4 and e + 4 <= n and bins[e + 3] == bins[e]:
            r0, r1, r2, r3 = wt[cols[e]], wt[cols[e + 1]], wt[cols[e + 2]], wt[cols[e + 3]]
            c0, c1, c2, c3 = count[0], count[1], count[2], count[3]
            for j in range(n_rep):  # each weight converted once, read by every sum
                c0[j], c1[j], c2[j], c3[j] = r0[j], r1[j], r2[j], r3[j]
            for k in range(stats.shape[1]):
                v0, v1, v2, v3 = stats[e, k], stats[e + 1, k], stats[e + 2, k], stats[e + 3, k]
                acc = into[k]
                for j in range(n_rep):
                    acc[j] += c0[j] * v0 + c1[j] * v1 + c2[j] * v2 + c3[j] * v3
            e += 4
            continue
        row, c0 = wt[cols[e]], count[0]
        for j in range(n_rep):
            c0[j] = row[j]
        for k in range(stats.shape[1]):
            value = stats[e, k]
            acc = into[k]
            for j in range(n_rep):
                acc[j] += c0[j] * value
        e += 1


_kernel = LazyKernel(_bin_sums)


@dataclass(frozen=True)
class BinEntries:
    """One ECE column as its (patient, bin) entries.

    Attributes
    ----------
    cols, bins : numpy.ndarray
        Each entry's weight column (patient) and bin.
    stats : numpy.ndarray
        ``(entries, sums)`` float64: rows and gap sum (plug-in), or rows, gap sum, its square,
        gap sum × rows and rows squared (debiased).
    n_bins : int
    """

    cols: np.ndarray
    bins: np.ndarray
    stats: np.ndarray
    n_bins: int

    @classmethod
    def of(cls, weight_cols: np.ndarray, bins: np.ndarray, gap: np.ndarray, n_bins: int,
           debiased: bool) -> BinEntries:  # fmt: skip
        """From each row's weight column, bin and gap (hit − confidence)."""
        n_cols = int(weight_cols.max()) + 1 if len(weight_cols) else 1
        # sorted by bin, then weight column: the kernel adds a bin's entries together
        cells, inverse = np.unique(bins * n_cols + weight_cols, return_inverse=True)
        gap_sum = np.bincount(inverse, weights=gap, minlength=len(cells))
        rows = np.bincount(inverse, minlength=len(cells)).astype(np.float64)
        sums = [rows, gap_sum, gap_sum**2, gap_sum * rows, rows**2] if debiased else [rows, gap_sum]
        b, col = np.divmod(cells, n_cols)
        return cls(col.astype(np.intp), b.astype(np.intp), np.ascontiguousarray(np.stack(sums, 1)),
                   n_bins)  # fmt: skip

    def sums(self, wt: np.ndarray, per_pass: int = 4) -> np.ndarray:
        """``(bins, sums, replicates)`` per-bin sums under a block of weights ``wt``
        (``(weight columns, replicates)``), ``per_pass`` (4 or 1) entries of a bin added per
        pass over its sums (the same sums to float64 rounding;
        ``benchmarks/rows_per_pass.py`` times both)."""
        if per_pass not in (1, 4):
            raise ValueError(f"per_pass must be 1 or 4. Got {per_pass}.")
        out = np.empty((self.n_bins, self.stats.shape[1], wt.shape[1]))
        _kernel(self.cols, self.bins, self.stats, wt, per_pass, np.empty((4, wt.shape[1])), out)
        return out
