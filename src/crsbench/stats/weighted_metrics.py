"""Macro-AUROC and ECE of one prediction under many bootstrap weightings at once.

Each replicate is a row of a ``(B, n)`` weight matrix (how many times each test row was
drawn; :class:`ReplicateWeights`). The AUROC of a score column sorts its negatives once; the
weighted count of negatives below each positive is then a cumulative sum of the negatives'
weights along that order, read at each positive's place (ties between a positive and
negatives count one half, the midrank rule), and every replicate is one row of that matrix
work. Integer counts are summed in integers (exact); other weights in float64. ECE gaps are
summed once per (patient, bin) and every replicate's per-bin gaps are one matrix product. With
all weights 1 the AUROC equals the store's (:func:`crsbench.metrics.macro_auroc`) exactly, the
ECE (:func:`crsbench.metrics.expected_calibration_error`) to float64 rounding.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from crsbench.core.errors import DataError
from crsbench.protocol import ECE_BINS

N_BINS = ECE_BINS
_INT32_MAX = np.iinfo(np.int32).max
_CACHE_ELEMENTS = 1 << 18  # cumulative sums per block of replicates (about 1 MiB of int32)
_ECE_BLOCK_ELEMENTS = 1 << 20  # patient counts per block of the ECE's matrix product (8 MiB)


@dataclass(frozen=True)
class ReplicateWeights:
    """Bootstrap weights of a split's rows, one row per replicate.

    Row ``i`` of the split weighs ``counts[b, inverse[i]]`` in replicate ``b``: ``counts`` is
    ``(B, m)`` (one column per patient when every image of a patient moves together, else one
    per row) and ``inverse`` maps rows to its columns; gathering from the small patient matrix
    is what the metrics spend most time on. Integer counts are kept in the smallest unsigned
    type that holds them and summed in ``sum_dtype`` (int32 when every sum the AUROC forms
    fits in it, else int64), so those sums are exact; other weights are float64.
    """

    counts: np.ndarray
    inverse: np.ndarray
    sum_dtype: type

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
        top = int(arr.max()) if arr.size else 0
        small = np.uint8 if top <= np.iinfo(np.uint8).max else np.int64
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

    def block(self, start: int, size: int) -> np.ndarray:
        """Replicates ``start … start + size − 1`` in ``sum_dtype``, one all-zero column appended."""
        rows = self.counts[start : start + size]
        out = np.zeros((rows.shape[0], rows.shape[1] + 1), dtype=self.sum_dtype)
        out[:, :-1] = rows
        return out


@dataclass(frozen=True)
class _ColumnOrder:
    """One score column's order, shared by every block of replicates.

    ``gather`` lists the weight column of each negative in score order, preceded by the
    all-zero column the blocks carry (so the cumulative sum starts at 0); ``below`` and
    ``upto`` count the negatives strictly below and at most each positive's score.
    """

    gather: np.ndarray
    pos_cols: np.ndarray
    below: np.ndarray
    upto: np.ndarray | None  # None without ties between a positive and a negative

    @classmethod
    def of(cls, target, score, w: ReplicateWeights, rows) -> _ColumnOrder:
        idx = np.arange(len(target)) if rows is None else np.asarray(rows)
        pos = np.asarray(target).astype(bool)
        neg_local = np.flatnonzero(~pos)
        # any order inside a tie group gives the same sums: the tie is read as a whole
        neg_local = neg_local[np.argsort(score[neg_local])]
        neg_scores, pos_scores = score[neg_local], score[pos]
        below = np.searchsorted(neg_scores, pos_scores, side="left")
        upto = np.searchsorted(neg_scores, pos_scores, side="right")
        zero_col = w.counts.shape[1]
        gather = np.r_[zero_col, w.inverse[idx[neg_local]]]
        ties = not np.array_equal(below, upto)
        return cls(gather, w.inverse[idx[pos]], below, upto if ties else None)


def weighted_auroc_column(
    target: np.ndarray, score: np.ndarray, w: ReplicateWeights, rows: np.ndarray | None = None
) -> np.ndarray:
    """AUROC of one score column under every replicate: shape ``(B,)``.

    ``rows`` are the test rows of ``w`` that ``target`` and ``score`` belong to (all when
    ``None``). NaN in a replicate without both classes. The column is sorted once for all
    replicates, which are then evaluated in blocks small enough that the cumulative sums stay
    in cache.
    """
    order = _ColumnOrder.of(target, score, w, rows)
    step = max(8, _CACHE_ELEMENTS // len(order.gather))
    out = np.empty(w.n_replicates)
    for start in range(0, w.n_replicates, step):
        out[start : start + step] = _sorted_auroc(w.block(start, step), order)
    return out


def _sorted_auroc(block: np.ndarray, order: _ColumnOrder) -> np.ndarray:
    """AUROC per row of a block of weights (a zero column last) from the column's order."""
    # weighted negatives below each place: gathered in score order, summed in place
    cum = block.take(order.gather, axis=1)
    np.cumsum(cum, axis=1, out=cum)
    # weighted negatives below each positive; with ties, twice that with a tie counted one half
    below = cum.take(order.below, axis=1)
    halves = 1.0 if order.upto is None else 2.0
    if order.upto is not None:
        below += cum.take(order.upto, axis=1)
    w_pos = block.take(order.pos_cols, axis=1)
    num = np.einsum("bi,bi->b", below, w_pos)
    den = halves * w_pos.sum(axis=1, dtype=np.float64) * cum[:, -1].astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / den, np.nan)


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
    for rows, target, score in _binary_columns(y, prob, task):
        auc = weighted_auroc_column(target, score, rw, rows)
        ok = np.isfinite(auc)
        total += np.where(ok, auc, 0.0)
        n += ok
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, total / n, np.nan)


def _bins(conf: np.ndarray, n_bins: int) -> np.ndarray:
    """Each row's equal-width bin on [0, 1] (the ECE's binning)."""
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    return np.clip(np.searchsorted(edges, conf, side="right") - 1, 0, n_bins - 1)


def _patient_bin_sums(conf, acc, w: ReplicateWeights, rows, n_bins):
    """Per (weight column, bin): the summed gaps ``acc − conf`` and the rows, ``(m, bins)``."""
    cols = w.inverse if rows is None else w.inverse[np.asarray(rows)]
    size = w.counts.shape[1] * n_bins
    cell = cols * n_bins + _bins(conf, n_bins)
    gap = np.bincount(cell, weights=acc - conf, minlength=size).reshape(-1, n_bins)
    n_rows = np.bincount(cell, minlength=size).reshape(-1, n_bins).astype(np.float64)
    return gap, n_rows


def _shrunk_gap_shift(gap: np.ndarray, n_rows: np.ndarray) -> np.ndarray:
    """Per bin, how far the mean gap moves when shrunk by one standard error towards 0.

    The standard error is cluster-robust (a patient's rows are one cluster); a bin whose
    mean gap is within one standard error of 0 goes to 0.
    """
    mass = n_rows.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(mass > 0, gap.sum(axis=0) / mass, 0.0)
        se = np.where(mass > 0, np.sqrt(((gap - mean * n_rows) ** 2).sum(axis=0)) / mass, 0.0)
    return np.sign(mean) * np.maximum(np.abs(mean) - se, 0.0) - mean


def _binned_ece(conf, acc, w: ReplicateWeights, rows, n_bins, shrunk: bool = False):
    """ECE of each replicate from per-bin sums: ``Σ_bins |gap sum| / rows``.

    The gaps are first summed per (weight column, bin), so each replicate's per-bin sums are
    one matrix product with its weights, in blocks of replicates. ``shrunk`` moves every
    bin's mean gap by :func:`_shrunk_gap_shift` (the same shift in every replicate).
    """
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


def _weighted_binned_ece(conf, acc, w: ReplicateWeights, rows, n_bins) -> np.ndarray:
    """ECE of each replicate (:func:`weighted_ece`) for one column."""
    return _binned_ece(conf, acc, w, rows, n_bins)


def _shrunk_binned_ece(conf, acc, w: ReplicateWeights, rows, n_bins) -> np.ndarray:
    """ECE of each replicate around the shrunk bin gaps (:func:`weighted_shrunk_ece`)."""
    return _binned_ece(conf, acc, w, rows, n_bins, shrunk=True)


def _mean_abs_normal(mu: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """``E|mu + sd·Z|`` for standard normal ``Z`` (``|mu|`` where ``sd`` is 0)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(sd > 0, mu / sd, 0.0)
        folded = sd * np.sqrt(2 / np.pi) * np.exp(-(z**2) / 2) + mu * (1 - 2 * ndtr(-z))
    return np.where(sd > 0, folded, np.abs(mu))


def _debiased_binned_ece(conf, acc, w: ReplicateWeights, rows, n_bins) -> np.ndarray:
    """Debiased ECE of each replicate (:func:`weighted_debiased_ece`) for one column."""
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
    sums = np.tensordot(w.counts.astype(np.float64), per_patient, axes=(1, 0))  # (B, bins, 5)
    mass, gap, g2, gn, n2 = np.moveaxis(sums, -1, 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(mass > 0, gap / mass, 0.0)
        # cluster-robust variance of the bin mean (a patient's images are one cluster)
        var = np.where(mass > 0, (g2 - 2 * mean * gn + mean**2 * n2) / mass**2, 0.0)
        terms = mass * (2 * np.abs(mean) - _mean_abs_normal(mean, np.sqrt(np.maximum(var, 0))))
        total = mass.sum(axis=1)
        return np.where(total > 0, terms.sum(axis=1) / total, np.nan)


def _per_column_ece(y, prob, task, w, n_bins, column_fn) -> np.ndarray:
    """``column_fn`` over the ECE's columns (top label, or each label's labelled rows), averaged."""
    rw = ReplicateWeights.of(w)
    if task == "multiclass":
        conf = prob.max(axis=1)
        acc = (prob.argmax(axis=1) == y).astype(float)
        return column_fn(conf, acc, rw, None, n_bins)
    parts = []
    for j in range(prob.shape[1]):
        m = ~np.isnan(y[:, j])
        if m.any():
            rows = None if m.all() else np.flatnonzero(m)
            parts.append(column_fn(prob[m, j], y[m, j], rw, rows, n_bins))
    if not parts:
        return np.full(rw.n_replicates, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(np.stack(parts), axis=0)


def weighted_ece(
    y: np.ndarray,
    prob: np.ndarray,
    task: str,
    w: np.ndarray | ReplicateWeights,
    n_bins: int = N_BINS,
) -> np.ndarray:
    """ECE (equal-width bins, top-label or mean per-label) for each replicate of ``w``."""
    return _per_column_ece(y, prob, task, w, n_bins, _weighted_binned_ece)


def weighted_debiased_ece(
    y: np.ndarray,
    prob: np.ndarray,
    task: str,
    w: np.ndarray | ReplicateWeights,
    n_bins: int = N_BINS,
) -> np.ndarray:
    """A debiased estimate of the population binned ECE for each replicate of ``w``.

    The plug-in ECE averages ``|mean gap|`` over bins, and ``E|x̂| > |x|`` for a noisy bin
    mean ``x̂``: it overstates the population ECE on finite test sets. Following Kumar et al.
    (2019, *Verified uncertainty calibration*), each bin's term is corrected by its estimated
    bias under a normal approximation of the bin mean, ``2|x̂| − E|x̂ + s·Z|`` (``s`` the
    bin mean's standard error, cluster-robust over patients), same bins and weights as
    :func:`weighted_ece`. For intervals only: the reported ECE stays the plug-in.
    """
    return _per_column_ece(y, prob, task, w, n_bins, _debiased_binned_ece)


def weighted_shrunk_ece(
    y: np.ndarray,
    prob: np.ndarray,
    task: str,
    w: np.ndarray | ReplicateWeights,
    n_bins: int = N_BINS,
) -> np.ndarray:
    """ECE of each replicate of ``w`` in a bootstrap world whose bin gaps are shrunk.

    The plug-in ECE overstates the population ECE most where a bin's true gap is near 0,
    and a bootstrap world built on the observed gaps (rarely near 0) reproduces too little of
    that bias. Here each bin's resampled mean gap is moved by the same amount that takes the
    observed mean gap one standard error towards 0 (to 0 when within one standard error), so
    bins that may be calibrated are calibrated in this world. With all weights 1 it is the
    ECE of the shrunk gaps, the world's own value. Same bins and columns as
    :func:`weighted_ece`; for the ECE interval only
    (:func:`crsbench.stats.intervals.ece_interval`).
    """
    return _per_column_ece(y, prob, task, w, n_bins, _shrunk_binned_ece)
