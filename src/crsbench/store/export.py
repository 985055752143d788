"""Atomic export of a store (or one DuckDB query) to Parquet or CSV: temporary file, fsync,
rename."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

from crsbench.core.diskio import disk_error_in_text, make_folder, write_text_atomic
from crsbench.core.errors import StoreError
from crsbench.store.columns import GROUP_COLUMNS

EXPORT_FORMATS: tuple[str, ...] = ("parquet", "csv")
_COPY_OPTIONS = {"parquet": "FORMAT PARQUET, COMPRESSION ZSTD", "csv": "FORMAT CSV, HEADER TRUE"}


def _fsync_path(path: Path, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def export_query(con: Any, query: str, dest: Path | str, fmt: str) -> Path:
    """Write the result of ``query`` to ``dest`` atomically.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        Open connection.
    query : str
        A SELECT statement (trusted: built by the store, never from user text).
    dest : Path or str
        Final file path; its folder is created. A reader sees the old file or the complete
        new one, never a partial file.
    fmt : {"parquet", "csv"}
        Output format.

    Returns
    -------
    Path
        ``dest``.
    """
    if fmt not in EXPORT_FORMATS:
        raise StoreError(f"export format must be one of {EXPORT_FORMATS}. Got {fmt!r} instead.")
    final = Path(dest)
    make_folder(final.parent)
    tmp = final.with_name(f".{final.name}.tmp-{os.getpid()}")
    literal = str(tmp).replace("'", "''")
    try:
        con.execute(f"COPY ({query}) TO '{literal}' ({_COPY_OPTIONS[fmt]})")
        _fsync_path(tmp)
        os.replace(tmp, final)
        _fsync_path(final.parent, directory=True)
    except Exception as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, StoreError):
            raise
        disk = disk_error_in_text(exc, final)  # DuckDB's COPY says it in words, no errno
        raise disk or StoreError(f"could not export to {final}: {exc}") from exc
    return final


def write_json_atomic(dest: Path, value: Any) -> Path:
    """Write ``value`` as JSON to ``dest`` atomically (temporary file, fsync, rename; a
    refused write is a :class:`~crsbench.core.errors.DiskError` naming ``dest``)."""
    return write_text_atomic(dest, json.dumps(value, indent=2, sort_keys=True, default=str) + "\n")


def export_store(con: Any, meta: dict[str, Any], folder: Path, fmt: str) -> dict[str, Path]:
    """Write ``runs``, ``metrics`` (and, as Parquet, the per-sample predictions tables) to
    ``folder/<table>.<fmt>`` and the ``meta`` row to ``folder/meta.json``, each atomically.

    Returns
    -------
    dict
        Table name (or ``"meta"``) → the file written.
    """
    from crsbench.store.predictions import export_predictions

    meta = {k: (str(v) if isinstance(v, datetime) else v) for k, v in meta.items()}
    # per-sample predictions (binary blobs) are exported as Parquet only
    extra = export_predictions(con, folder) if fmt == "parquet" else {}
    metrics_order = ", ".join(GROUP_COLUMNS)
    return {
        **extra,
        "meta": write_json_atomic(folder / "meta.json", meta),
        "runs": export_query(
            con, "SELECT * FROM runs ORDER BY run_key", folder / f"runs.{fmt}", fmt
        ),
        "metrics": export_query(
            con, f"SELECT * FROM metrics ORDER BY {metrics_order}", folder / f"metrics.{fmt}", fmt
        ),
    }
