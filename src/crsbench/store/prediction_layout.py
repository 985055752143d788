"""Per-sample predictions in the results store: the layout shared by the writer and readers.

Three tables (``docs/config_and_store.md``, "Per-sample predictions"):

- ``eval_splits``: the rows one prediction is evaluated on, stored once per distinct set of
  rows: dataset, split (``test``, ``val`` or ``shift``), task, image ids and patient groups
  (lists, in evaluation order) and the label matrix (a float32 blob, NaN = not labelled).
- ``prediction_blobs``: one probability matrix (rows in the split's order), keyed by the
  sha256 of its content, so the full-label fit that every seed shares is stored once. It is
  float32 when that is lossless for the metrics (every column's order and ties, the ECE bin
  and, for a multi-class matrix, the top class of every row are those of the float64 values),
  else float64 (``dtype``). Two probabilities closer than float32's resolution (thousands of
  continuous values in a column always have some) would round to one value and tie where the
  AUROC saw an order: the larger is stored a few float32 steps up
  (:func:`order_preserving_float32`, at most :data:`MAX_NUDGE` from its float64 value), and
  only a matrix that still changes a metric stays float64.
- ``split_metadata``: the subgroup attributes of a split's rows (``sex``, ``age``, ``view``,
  ``site``; :mod:`crsbench.datasets.subgroup_attributes`), one row per (split, attribute), values in the
  split's order; optional (stores written before it have none).
- ``predictions``: which blob a run record's prediction is, on which split:
  ``run_key`` (→ ``runs``), ``split``, ``split_key``, ``prob_key``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np

from crsbench.core.errors import StoreError
from crsbench.protocol import ECE_BINS

SPLITS_TABLE = "eval_splits"
BLOBS_TABLE = "prediction_blobs"
PREDICTIONS_TABLE = "predictions"
SPLIT_META_TABLE = "split_metadata"
#: Every table of the predictions layout, in the order they are exported and restored.
PREDICTION_TABLES: tuple[str, ...] = (SPLITS_TABLE, BLOBS_TABLE, PREDICTIONS_TABLE)
#: How labels, and probabilities when lossless, are stored (little-endian float32, row-major).
BLOB_DTYPE = np.dtype("<f4")
#: The exact fallback of a probability matrix that float32 would change.
EXACT_DTYPE = np.dtype("<f8")
#: The most a stored float32 probability may move from its float64 value to keep the order:
#: about three float32 steps at 0.5, of the order of float32's own rounding (3e-8 there). A
#: threshold chosen on one matrix (validation) and applied to another (test, a shift target,
#: a perturbed set) compares values stored to this precision: a value within 2e-7 of the
#: threshold may fall on the other side of it.
MAX_NUDGE = 2e-7
#: Passes of :func:`order_preserving_float32` (each settles one more value of a run of ties
#: that float32 made; runs are a few values long).
_MAX_PASSES = 64
#: The split a run record is scored on (its test rows, or the shift target's rows) and the
#: validation split of the same model (kept for operating points picked on validation).
EVAL_SPLIT = "test"
VAL_SPLIT = "val"
#: ``eval_splits.split`` of a shift target's evaluation rows.
SHIFT_SPLIT = "shift"


def encode_matrix(values: np.ndarray) -> bytes:
    """A 2-D array as float32 bytes (row-major)."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[:, None]
    return np.ascontiguousarray(arr, dtype=BLOB_DTYPE).tobytes()


def _same_for_metrics(exact: np.ndarray, small: np.ndarray, multiclass: bool = True) -> bool:
    """Whether ``small`` has the order and ties of every column, the ECE bins and (when
    ``multiclass``) the top class of every row of ``exact`` (then AUROC is identical and ECE
    equal to rounding)."""
    order = np.argsort(exact, axis=0, kind="stable")
    a = np.take_along_axis(exact, order, axis=0)
    b = np.take_along_axis(small, order, axis=0)
    if not np.array_equal(np.diff(a, axis=0) > 0, np.diff(b, axis=0) > 0):
        return False
    if np.any(np.diff(b, axis=0) < 0):
        return False
    edges = np.linspace(0.0, 1.0, ECE_BINS + 1)
    if not np.array_equal(
        np.searchsorted(edges, exact, "right"), np.searchsorted(edges, small, "right")
    ):
        return False
    if not multiclass or exact.shape[1] == 0:
        return True
    return bool(np.array_equal(exact.argmax(axis=1), small.argmax(axis=1)))


def order_preserving_float32(exact: np.ndarray) -> np.ndarray:
    """``exact`` (2-D float64) as float32 with every column's order and ties kept.

    Rounding to float32 ties two values closer than its resolution. Walking each column in
    the order of ``exact``, a value above its predecessor is moved to the next float32 above
    the predecessor's stored value where rounding left it at or below it, and a value tied
    with its predecessor takes the predecessor's stored value; a run of such values settles
    one value per pass. Values move by a few float32 steps where float32 collapsed them and
    not at all elsewhere; the caller checks the bound and the metrics.
    """
    order = np.argsort(exact, axis=0, kind="stable")
    a = np.take_along_axis(exact, order, axis=0)
    with np.errstate(over="ignore"):  # beyond float32's range: inf, refused by the caller
        b = a.astype(np.float32)
    both = np.isfinite(a[:-1]) & np.isfinite(a[1:])  # NaN stays NaN, compared with nothing
    rises = np.diff(a, axis=0) > 0
    for _ in range(_MAX_PASSES):
        step = np.diff(b, axis=0)
        below, split = both & rises & (step <= 0), both & ~rises & (step != 0)
        if not (below.any() or split.any()):
            break
        i, j = np.nonzero(below)
        b[i + 1, j] = np.nextafter(b[i, j], np.float32(np.inf))
        i, j = np.nonzero(split)
        b[i + 1, j] = b[i, j]
    out = np.empty_like(b)
    np.put_along_axis(out, order, b, axis=0)
    return out


def encode_probabilities(prob: np.ndarray, task: str = "multiclass") -> tuple[bytes, str]:
    """A probability matrix as bytes and its dtype: ``"<f4"`` (the order-preserving float32
    values) when lossless for the metrics of ``task``, else ``"<f8"``."""
    exact = np.asarray(prob, dtype=np.float64)
    if exact.ndim == 1:
        exact = exact[:, None]
    small = order_preserving_float32(exact)
    wide = small.astype(np.float64)
    with np.errstate(invalid="ignore"):
        kept = (np.abs(wide - exact) <= MAX_NUDGE) | (wide == exact) | np.isnan(exact)
    close = bool(np.all(kept & (np.isnan(wide) == np.isnan(exact))))
    if close and _same_for_metrics(exact, wide, multiclass=task != "multilabel"):
        return np.ascontiguousarray(small, dtype=BLOB_DTYPE).tobytes(), BLOB_DTYPE.str
    return np.ascontiguousarray(exact, dtype=EXACT_DTYPE).tobytes(), EXACT_DTYPE.str


def decode_matrix(
    blob: bytes | bytearray,
    n_rows: int,
    n_cols: int,
    where: str = "blob",
    dtype: str = BLOB_DTYPE.str,
) -> np.ndarray:
    """The ``(n_rows, n_cols)`` float64 array of stored bytes of ``dtype`` (checked)."""
    return stored_matrix(blob, n_rows, n_cols, where, dtype).astype(np.float64)


def stored_matrix(
    blob: bytes | bytearray,
    n_rows: int,
    n_cols: int,
    where: str = "blob",
    dtype: str = BLOB_DTYPE.str,
) -> np.ndarray:
    """The ``(n_rows, n_cols)`` values of stored bytes of ``dtype`` (checked), in the stored
    dtype (float32 or float64), as a read-only view of ``blob`` (no copy).

    Every float32 value is exactly a float64 one, so widening it later gives the array
    :func:`decode_matrix` gives; half the memory while it is held.
    """
    if dtype not in (BLOB_DTYPE.str, EXACT_DTYPE.str):
        raise StoreError(f"{where} must be stored as <f4 or <f8. Got dtype {dtype!r} instead.")
    size = np.dtype(dtype).itemsize
    if len(blob) != int(n_rows) * int(n_cols) * size:
        raise StoreError(
            f"{where} must hold {n_rows} x {n_cols} values of {dtype} "
            f"({int(n_rows) * int(n_cols) * size} bytes). Got {len(blob)} bytes instead."
        )
    data = np.frombuffer(blob, dtype=np.dtype(dtype)).reshape(int(n_rows), int(n_cols))
    data.flags.writeable = False
    return data


def content_key(parts: Iterable[bytes | str]) -> str:
    """sha256 of the parts (each length-prefixed, so boundaries cannot collide)."""
    h = hashlib.sha256()
    for p in parts:
        b = p.encode("utf-8") if isinstance(p, str) else bytes(p)
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()
