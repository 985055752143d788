"""Bootstrap weights of a split's rows, one row per replicate, and the blocks the replicate
kernels read them in (:mod:`crsbench.stats.replicate_auroc`, :mod:`crsbench.stats.weighted_metrics`).

Integer counts are summed exactly in integers; the AUROC kernel reads them transposed, one
block of replicates at a time (``(patients, replicates)``, in the counts' own type: uint8 for
almost every bootstrap). A block is built once and shared by every score column evaluated
with the same weights (every label and prediction of a cell's test split).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from crsbench.core.errors import DataError

_INT32_MAX = np.iinfo(np.int32).max
#: Replicates per block of the AUROC kernel: a block's weights take about this many bytes
#: (they stay in the last-level cache while the kernel reads a row's replicates at random
#: rows), and the wider the block, the less each row's step costs per replicate; measured
#: best at 512 replicates of 12,700 patients, 1,024 of 800 (``benchmarks/auroc_kernel.py``).
_BLOCK_BYTES = 1 << 23
_MIN_BLOCK, _MAX_BLOCK = 256, 1024


def narrow_count_dtype(counts: np.ndarray) -> type:
    """The smallest type :class:`ReplicateWeights` keeps non-negative integer ``counts`` in:
    uint8 when every count fits (a bootstrap's counts of a patient almost always do), else
    int64."""
    top = int(counts.max()) if counts.size else 0
    return np.uint8 if top <= np.iinfo(np.uint8).max else np.int64


@dataclass(frozen=True)
class ReplicateWeights:
    """Bootstrap weights of a split's rows, one row per replicate.

    Row ``i`` of the split weighs ``counts[b, inverse[i]]`` in replicate ``b``: ``counts`` is
    ``(B, m)`` (one column per patient when every image of a patient moves together, else one
    per row) and ``inverse`` maps rows to its columns. Integer counts are kept in the smallest
    unsigned type that holds them; ``sum_dtype`` (int32 when twice the square of the largest
    replicate's rows fits in it, else int64) is the sums' type of the reference kernels
    (:mod:`crsbench.stats._reference_kernels`, :mod:`crsbench.stats._sparse_auroc`); the
    compiled kernel picks its own from :attr:`top` (:class:`~crsbench.stats.auroc_kernel.SumTypes`).
    Other weights are float64.
    """

    counts: np.ndarray
    inverse: np.ndarray
    sum_dtype: type
    _blocks: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(
        cls, w: np.ndarray | ReplicateWeights, inverse: np.ndarray | None = None
    ) -> ReplicateWeights:
        """From a ``(B, m)`` weight matrix and the column of each row (identity when ``None``)."""
        if isinstance(w, ReplicateWeights):
            return w
        arr = np.asarray(w)
        if arr.ndim != 2:
            raise DataError(f"replicate weights must be a (B, n) matrix. Got shape {arr.shape}.")
        inv = np.arange(arr.shape[1]) if inverse is None else np.asarray(inverse, dtype=np.intp)
        if arr.size and np.min(arr) < 0:
            raise DataError("replicate weights must be non-negative. Got a negative weight.")
        if not (np.issubdtype(arr.dtype, np.integer) or np.array_equal(arr, np.round(arr))):
            return cls(np.ascontiguousarray(arr, dtype=np.float64), inv, np.float64)
        small = narrow_count_dtype(arr)
        per_col = np.bincount(inv, minlength=arr.shape[1])
        # rows of the largest replicate (buffered, no float copy of the weights)
        total = (
            float(np.einsum("bm,m->b", arr, per_col, dtype=np.float64).max()) if arr.size else 0.0
        )
        sums = np.int32 if total * total / 2 < _INT32_MAX else np.int64
        return cls(np.ascontiguousarray(arr, dtype=small), inv, sums)

    @property
    def n_replicates(self) -> int:
        """Replicates (rows)."""
        return int(self.counts.shape[0])

    @property
    def n_columns(self) -> int:
        """Weight columns (patients, or rows)."""
        return int(self.counts.shape[1])

    @property
    def top(self) -> float:
        """The largest weight (0 without replicates); bounds the AUROC kernel's sums."""
        if "top" not in self._blocks:
            self._blocks["top"] = float(self.counts.max()) if self.counts.size else 0.0
        return self._blocks["top"]

    @property
    def block_size(self) -> int:
        """Replicates per block of the AUROC kernel (a power of two, by the weights' size)."""
        fit = _BLOCK_BYTES // max(self.n_columns * self.counts.dtype.itemsize, 1)
        size = 1 << max(int(fit).bit_length() - 1, 0)
        return int(min(max(size, _MIN_BLOCK), _MAX_BLOCK))

    def transposed(self, start: int, size: int) -> np.ndarray:
        """Replicates ``start … start + size − 1`` as a contiguous ``(m, size)`` array of the
        counts' type (what the AUROC kernel reads); built once per block and kept."""
        key = ("T", start, size)
        if key not in self._blocks:
            self._blocks[key] = np.ascontiguousarray(self.counts[start : start + size].T)
        return self._blocks[key]
