"""Per-bin sums of an ECE column under a block of bootstrap replicates, compiled (numba).

A label column's rows fall in a patient's few bins (of 15): the column is held as its
(patient, bin) entries, each with its sums over the patient's rows of that bin (rows, gap
sum, and for the debiased ECE the gap sum's square, the gap sum × rows and the rows' square).
A replicate's per-bin sums are then the entries' sums weighted by their patient's count in
the replicate; the kernel adds them for a whole block of replicates, every replicate in the
innermost loop, touching only the entries there are (about one per row) where a matrix
product of the patients' counts with every (bin, sum) column touches every patient's 15 bins.
Float64 sums: equal to the matrix product's to float64 rounding (tested against it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crsbench.stats.jit import LazyKernel


def _bin_sums(cols, bins, stats, wt, out):
    """``out[bin, k, j]`` = Σ over entries ``e`` in ``bin`` of ``wt[cols[e], j] · stats[e, k]``
    (the kernel numba compiles; ``out`` is ``(bins, sums, replicates)``)."""
    n_rep = wt.shape[1]
    out[:] = 0.0
    count = np.empty(n_rep)
    for e in range(cols.shape[0]):
        row = wt[cols[e]]
        for j in range(n_rep):
            count[j] = row[j]
        into = out[bins[e]]
        for k in range(stats.shape[1]):
            value = stats[e, k]
            acc = into[k]
            for j in range(n_rep):
                acc[j] += count[j] * value


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
        cells, inverse = np.unique(weight_cols * n_bins + bins, return_inverse=True)
        gap_sum = np.bincount(inverse, weights=gap, minlength=len(cells))
        rows = np.bincount(inverse, minlength=len(cells)).astype(np.float64)
        sums = [rows, gap_sum, gap_sum**2, gap_sum * rows, rows**2] if debiased else [rows, gap_sum]
        col, b = np.divmod(cells, n_bins)
        return cls(col.astype(np.intp), b.astype(np.intp), np.ascontiguousarray(np.stack(sums, 1)),
                   n_bins)  # fmt: skip

    def sums(self, wt: np.ndarray) -> np.ndarray:
        """``(bins, sums, replicates)`` per-bin sums under a block of weights ``wt``
        (``(weight columns, replicates)``)."""
        out = np.empty((self.n_bins, self.stats.shape[1], wt.shape[1]))
        _kernel(self.cols, self.bins, self.stats, wt, out)
        return out
