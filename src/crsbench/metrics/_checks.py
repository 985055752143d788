"""Input checks shared by the metric functions (arrays only, no I/O)."""

from __future__ import annotations

import numpy as np

from crsbench.core.errors import DataError
from crsbench.core.types import check_task
from crsbench.core.validation import require_binary_or_nan


class UndefinedMetricWarning(UserWarning):
    """A metric is undefined for this input (e.g. every label lacks positives or negatives).

    The metric returns NaN and the reason is in its ``return_details=True`` output.
    """


def as_scores(y_score: object, name: str = "y_score") -> np.ndarray:
    """Return a finite float64 2-D (or 1-D) array, else raise :class:`DataError`."""
    arr = np.asarray(y_score, dtype=np.float64)
    if arr.ndim not in (1, 2):
        raise DataError(f"{name} must be a 1-D or 2-D array. Got shape {arr.shape} instead.")
    bad = ~np.isfinite(arr)
    if bad.any():
        rows = np.flatnonzero(bad.reshape(len(arr), -1).any(axis=1))
        raise DataError(
            f"{name} must be finite. Got {int(bad.sum())} NaN/Inf values in {rows.size} rows "
            f"instead (first rows, 1-based: {(rows[:5] + 1).tolist()})."
        )
    return arr


def check_multiclass(y_true: object, y_score: object) -> tuple[np.ndarray, np.ndarray]:
    """Validate a class-index vector and an N×K score matrix; return (int vector, float matrix)."""
    scores = as_scores(y_score)
    if scores.ndim != 2:
        raise DataError(
            f"y_score must be an N×K matrix for task 'multiclass'. Got shape {scores.shape} instead."
        )
    y = np.asarray(y_true)
    if y.ndim != 1 or y.shape[0] != scores.shape[0]:
        raise DataError(
            f"y_true must be a vector of {scores.shape[0]} class indices (one per y_score row). "
            f"Got shape {y.shape} instead."
        )
    if y.dtype.kind == "f":
        if not np.all(np.isfinite(y)) or not np.all(y == np.round(y)):
            raise DataError(
                "y_true must hold integer class indices. Got non-integer values instead."
            )
    elif y.dtype.kind not in "iub":
        raise DataError(f"y_true must hold integer class indices. Got dtype {y.dtype} instead.")
    y = y.astype(np.int64)
    k = scores.shape[1]
    bad = (y < 0) | (y >= k)
    if bad.any():
        first = np.flatnonzero(bad)[:5]
        raise DataError(
            f"y_true must hold class indices in [0, {k - 1}]. Got {int(bad.sum())} values outside "
            f"(first rows, 1-based: {(first + 1).tolist()}; values {y[first].tolist()}) instead."
        )
    return y, scores


def check_multilabel(y_true: object, y_score: object) -> tuple[np.ndarray, np.ndarray]:
    """Validate a 0/1/NaN N×L label matrix and an N×L score matrix."""
    scores = as_scores(y_score)
    y = np.asarray(y_true, dtype=np.float64)
    if scores.ndim == 1:
        scores = scores[:, None]
    if y.ndim == 1:
        y = y[:, None]
    if y.shape != scores.shape:
        raise DataError(
            f"y_true must have the shape of y_score {scores.shape} for task 'multilabel'. "
            f"Got shape {y.shape} instead."
        )
    require_binary_or_nan(y, "y_true", "map uncertain -1 labels before computing metrics.")
    return y, scores


def check(task: str, y_true: object, y_score: object) -> tuple[np.ndarray, np.ndarray]:
    """Dispatch to :func:`check_multiclass` or :func:`check_multilabel`."""
    check_task(task)
    if task == "multiclass":
        return check_multiclass(y_true, y_score)
    return check_multilabel(y_true, y_score)
