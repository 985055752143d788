"""Table layout of the results store (DDL, Arrow schema), derived from the one declaration in
:mod:`crsbench.store.columns`, and its transaction helper."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa

from crsbench.core.diskio import disk_error_in_text
from crsbench.core.errors import StoreError
from crsbench.store.columns import GROUP_COLUMNS, METRIC_COLUMNS, RUNS_BY_NAME, RUNS_TABLE
from crsbench.store.table_specs import META

#: The Arrow type of each SQL type the store's columns use.
ARROW_TYPES: dict[str, pa.DataType] = {
    "VARCHAR": pa.string(),
    "INTEGER": pa.int32(),
    "DOUBLE": pa.float64(),
    "TIMESTAMP": pa.timestamp("us"),
}
#: The Arrow schema of table ``runs`` (from :data:`~crsbench.store.columns.RUNS_TABLE`).
ARROW_SCHEMA = pa.schema([(c.name, ARROW_TYPES[c.sql]) for c in RUNS_TABLE])


def runs_ddl() -> str:
    """``CREATE TABLE runs``: every column of :data:`~crsbench.store.columns.RUNS_TABLE` with
    its SQL type, metrics nullable, ``run_key`` the key."""
    cols = []
    for c in RUNS_TABLE:
        null = "" if c.nullable else " NOT NULL"
        key = " PRIMARY KEY" if c.name == "run_key" else ""
        cols.append(f"{c.name} {c.sql}{null}{key}")
    return f"CREATE TABLE runs ({', '.join(cols)})"


def metrics_ddl() -> str:
    """``CREATE TABLE metrics``: the group columns, ``n_seeds`` and mean/std/count per metric."""
    cols = [f"{c} {RUNS_BY_NAME[c].sql} NOT NULL" for c in GROUP_COLUMNS]
    cols.append("n_seeds INTEGER NOT NULL")
    for m in METRIC_COLUMNS:
        cols += [f"{m}_mean DOUBLE", f"{m}_std DOUBLE", f"{m}_n_seeds INTEGER NOT NULL"]
    return f"CREATE TABLE metrics ({', '.join(cols)})"


META_DDL = META.ddl()


class Transaction:
    """``BEGIN`` … ``COMMIT`` (``ROLLBACK`` on error); DuckDB errors become StoreError."""

    def __init__(self, con: duckdb.DuckDBPyConnection, path: Path) -> None:
        self.con, self.path = con, path

    def __enter__(self) -> None:
        self.con.execute("BEGIN TRANSACTION").fetchall()

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is not None:
            try:
                self.con.execute("ROLLBACK").fetchall()
            except duckdb.Error:
                pass
            if isinstance(exc, duckdb.Error):
                disk = disk_error_in_text(exc, self.path)
                if disk is not None:
                    raise disk from exc
                raise StoreError(f"write to {self.path} failed and was rolled back: {exc}") from exc
            return
        try:
            self.con.execute("COMMIT").fetchall()
        except duckdb.Error as err:
            disk = disk_error_in_text(err, self.path)
            raise disk or StoreError(
                f"commit to {self.path} failed; nothing was written: {err}"
            ) from err
