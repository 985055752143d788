"""Validation of array inputs (probes, recalibrators): finite features, well-formed targets,
matching shapes."""

from __future__ import annotations

import numpy as np

from crsbench.core.errors import DataError
from crsbench.core.types import check_task


def check_features(X: object, name: str = "X", n_features: int | None = None) -> np.ndarray:
    """Return ``X`` as a 2-D float array (float32 kept, others float64).

    Raises
    ------
    DataError
        Wrong rank, wrong column count, or NaN/Inf values (naming how many rows and columns
        hold them and the first few 1-based row numbers).
    """
    arr = np.asarray(X)
    if arr.dtype != np.float32:
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise DataError(f"{name} must be numeric. Got dtype {arr.dtype} instead.") from exc
    if arr.ndim != 2:
        raise DataError(
            f"{name} must be a 2-D (rows × features) array. Got shape {arr.shape} instead."
        )
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise DataError(
            f"{name} must have at least one row and one column. Got shape {arr.shape} instead."
        )
    if n_features is not None and arr.shape[1] != n_features:
        raise DataError(
            f"{name} must have {n_features} feature columns (as fitted). Got {arr.shape[1]} instead."
        )
    finite = np.isfinite(arr)
    if not finite.all():
        bad = ~finite
        rows = np.flatnonzero(bad.any(axis=1))
        cols = np.flatnonzero(bad.any(axis=0))
        raise DataError(
            f"{name} must hold finite features. Got NaN/Inf in {rows.size} rows and {cols.size} "
            f"columns instead (first rows, 1-based: {(rows[:5] + 1).tolist()}; first columns, "
            f"1-based: {(cols[:5] + 1).tolist()})."
        )
    return arr


def check_targets(
    y: object, task: str, n_rows: int, name: str = "y", n_outputs: int | None = None
) -> np.ndarray:
    """Validate targets: a class-index vector (multiclass) or a 0/1/NaN matrix (multilabel).

    Returns an int64 vector or a float64 N×L matrix.
    """
    check_task(task)
    arr = np.asarray(y)
    if task == "multiclass":
        if arr.ndim != 1 or arr.shape[0] != n_rows:
            raise DataError(
                f"{name} must be a vector of {n_rows} class indices for task 'multiclass'. "
                f"Got shape {arr.shape} instead."
            )
        if arr.dtype.kind == "f":
            ok = np.isfinite(arr) & (arr == np.round(arr))
        elif arr.dtype.kind in "iub":
            ok = np.ones(arr.shape, dtype=bool)
        else:
            raise DataError(
                f"{name} must hold integer class indices. Got dtype {arr.dtype} instead."
            )
        out = np.where(ok, arr, -1).astype(np.int64)
        bad = ~ok | (out < 0) | ((out >= n_outputs) if n_outputs is not None else False)
        if bad.any():
            rows = np.flatnonzero(bad)
            hi = f"[0, {n_outputs - 1}]" if n_outputs is not None else ">= 0"
            raise DataError(
                f"{name} must hold class indices {hi}. Got {rows.size} other values instead "
                f"(first rows, 1-based: {(rows[:5] + 1).tolist()}; values: {arr[rows[:5]].tolist()})."
            )
        return out
    arr = arr.astype(np.float64)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] != n_rows:
        raise DataError(
            f"{name} must be an N×L matrix with N = {n_rows} for task 'multilabel'. "
            f"Got shape {arr.shape} instead."
        )
    if n_outputs is not None and arr.shape[1] != n_outputs:
        raise DataError(f"{name} must have {n_outputs} label columns. Got {arr.shape[1]} instead.")
    require_binary_or_nan(arr, name, "map uncertain -1 labels (mask or policy) before fitting.")
    return arr


def require_binary_or_nan(arr: np.ndarray, name: str, advice: str) -> None:
    """Raise a :class:`DataError` naming the first cell of the N×L matrix ``arr`` that is
    not 0, 1 or NaN (with its 1-based row and column and the count of such cells)."""
    bad = ~np.isnan(arr) & (arr != 0) & (arr != 1)
    if bad.any():
        rows, cols = np.nonzero(bad)
        raise DataError(
            f"{name} must hold 0, 1 or NaN for task 'multilabel'. Got {rows.size} other values "
            f"instead (first at row {rows[0] + 1}, column {cols[0] + 1}: {arr[rows[0], cols[0]]!r}); "
            f"{advice}"
        )


def check_C(C: object, name: str = "C") -> float:
    """A positive finite regularisation constant."""
    try:
        value = float(C)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive float. Got {C!r} instead.") from None
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive float. Got {C!r} instead.")
    return value
