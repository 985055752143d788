"""Robust, vectorised CSV reading for label files, and row-pointing error messages.

Every cell is read as a string (no type guessing, blank stays ``""``), so the adapters decide
what a value means. Header drift is absorbed: a UTF-8 BOM, CRLF line ends, reordered columns,
spaces around column names and a trailing delimiter parse the same as the clean file. A
missing or duplicated required column raises :class:`DataError` naming it.
"""

from __future__ import annotations

import csv
import difflib
import gzip
import io
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from crsbench.core.errors import DataError

MAX_LISTED = 20


def _open_text(path: Path) -> io.TextIOBase:
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8-sig", newline="")
    return open(path, encoding="utf-8-sig", newline="")


def read_header(path: Path) -> list[str]:
    """Column names of ``path`` (BOM removed, surrounding spaces stripped)."""
    try:
        with _open_text(path) as handle:
            row = next(csv.reader(handle), None)
    except (OSError, UnicodeDecodeError, EOFError) as exc:
        raise DataError(f"{path}: cannot be read as a UTF-8 CSV file ({exc}).") from None
    if not row:
        raise DataError(f"{path}: is empty. Must have a header row and at least one data row.")
    return [name.strip() for name in row]


def read_csv(path: Path, required: Sequence[str]) -> pd.DataFrame:
    """Read ``path`` (plain or ``.gz``) with every cell as a stripped-of-nothing string.

    Parameters
    ----------
    path : Path
        The CSV file.
    required : sequence of str
        Columns that must be present exactly once.

    Returns
    -------
    pandas.DataFrame
        All columns as strings, blanks as ``""``, a default RangeIndex (row ``i`` is data
        row ``i + 1``).
    """
    if not path.is_file():
        raise DataError(f"label file {str(path)!r} is missing. Must exist as a regular file.")
    header = read_header(path)
    for name in required:
        count = header.count(name)
        if count == 0:
            close = difflib.get_close_matches(name, header, n=3, cutoff=0.6)
            hint = f" Did you mean: {', '.join(repr(c) for c in close)}?" if close else ""
            raise DataError(
                f"{path}: column {name!r} absent. Must have columns {list(required)}."
                f"{hint} Found columns {header}."
            )
        if count > 1:
            raise DataError(f"{path}: column {name!r} appears {count} times. Must appear once.")
    try:
        with warnings.catch_warnings():
            # a trailing delimiter on data rows only: pandas warns, then drops the empty field
            warnings.simplefilter("ignore", pd.errors.ParserWarning)
            frame = pd.read_csv(
                path,
                dtype=str,
                keep_default_na=False,
                na_filter=False,
                encoding="utf-8-sig",
                index_col=False,
                compression="infer",
            )
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: malformed CSV ({exc}).") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    unnamed = [c for c in frame.columns if c.startswith("Unnamed:") and (frame[c] == "").all()]
    frame = frame.drop(columns=unnamed)
    if len(frame) == 0:
        raise DataError(f"{path}: has a header but no data rows. Must have at least one row.")
    return frame.reset_index(drop=True)


def row_list(rows: np.ndarray) -> str:
    """``"3, 7, 9"`` for the first :data:`MAX_LISTED` 0-based row indices (shown 1-based)."""
    shown = ", ".join(str(int(r) + 1) for r in rows[:MAX_LISTED])
    return shown + (", ..." if len(rows) > MAX_LISTED else "")


def raise_bad_rows(
    path: Path, column: str, bad: np.ndarray, values: pd.Series | Sequence[str], expected: str
) -> None:
    """Raise :class:`DataError` if ``bad`` (bool mask over rows) has any True.

    The message names the file, the first bad 1-based data row (and its file line), the
    column, the offending value, what was expected, and how many rows are bad in total.
    """
    rows = np.flatnonzero(np.asarray(bad))
    if len(rows) == 0:
        return
    first = int(rows[0])
    value = values.iloc[first] if isinstance(values, pd.Series) else values[first]
    raise DataError(
        f"{path}: column {column!r} must be {expected}. Got {value!r} instead at data row "
        f"{first + 1} (line {first + 2}). {len(rows)} row(s) are bad in total "
        f"(data rows {row_list(rows)})."
    )


def raise_duplicates(path: Path, column: str, keys: pd.Series | pd.DataFrame) -> None:
    """Raise :class:`DataError` if ``keys`` (Series or frame of key columns) repeats."""
    dup = keys.duplicated(keep=False).to_numpy()
    rows = np.flatnonzero(dup)
    if len(rows) == 0:
        return
    first_key = keys.iloc[int(rows[0])]
    if isinstance(first_key, pd.Series):
        first_key = tuple(first_key.tolist())
    raise DataError(
        f"{path}: {column} must be unique. Got {first_key!r} more than once: "
        f"{len(rows)} rows share a repeated value (data rows {row_list(rows)})."
    )


def parse_cells(
    frame: pd.DataFrame, columns: Sequence[str], mapping: dict[str, float], path: Path
) -> np.ndarray:
    """Map string cells to floats through ``mapping`` (after stripping spaces), vectorised.

    Distinct values are parsed once (``pd.factorize``), so a 223k x 14 block takes
    milliseconds. A value outside ``mapping`` raises via :func:`raise_bad_rows`.
    """
    out = np.empty((len(frame), len(columns)), dtype=np.float64)
    allowed = ", ".join(repr(k) for k in mapping)
    for j, column in enumerate(columns):
        codes, uniques = pd.factorize(frame[column], sort=False)
        parsed = np.array([mapping.get(str(u).strip(), np.inf) for u in uniques], dtype=float)
        col = parsed[codes] if len(parsed) else np.empty(0)
        bad = np.isinf(col)
        if bad.any():
            raise_bad_rows(path, column, bad, frame[column], f"one of {allowed}")
        out[:, j] = col
    return out


#: Cell forms of the CheXpert / MIMIC label domain {1, 0, -1, blank}.
TRISTATE_CELLS: dict[str, float] = {
    "1.0": 1.0,
    "1": 1.0,
    "0.0": 0.0,
    "0": 0.0,
    "-1.0": -1.0,
    "-1": -1.0,
    "": -2.0,  # blank = not mentioned; mapped to 0 by apply_uncertainty
}

UNCERTAINTY_POLICIES: tuple[str, ...] = ("ignore", "zeros", "ones")


def apply_uncertainty(raw: np.ndarray, policy: str) -> np.ndarray:
    """Turn tri-state codes into labels: blank → 0, −1 → NaN / 0 / 1 per ``policy``."""
    labels = raw.copy()
    labels[raw == -2.0] = 0.0
    fill = {"ignore": np.nan, "zeros": 0.0, "ones": 1.0}[policy]
    labels[raw == -1.0] = fill
    return labels
