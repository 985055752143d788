"""The store's ``quarantine`` table: every image a run left out because it could not be read.

One row per (dataset, image id), written by the driver when a cell reports it (the rule is
:mod:`crsbench.datasets.bad_images`). The per-split counts are also in every run record of
the cell (``details["n_quarantined"]``); this table names the files for ``crsbench status``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import duckdb
import pandas as pd

from crsbench.core.errors import StoreError
from crsbench.store.schema import Transaction
from crsbench.store.table_specs import QUARANTINE

QUARANTINE_COLUMNS: tuple[str, ...] = QUARANTINE.names
QUARANTINE_DDL = QUARANTINE.ddl()


def record_quarantine(store: Any, entries: Iterable[Mapping[str, str]]) -> int:
    """Add quarantined images to ``store`` (once per dataset and image id); return how many
    were new. Creates the table in a store written before it existed."""
    if store.mode != "rw":
        raise StoreError(f"results store {store.path} was opened read-only.")
    rows = [tuple(str(e.get(c, "")) for c in QUARANTINE_COLUMNS) for e in entries]
    if not rows:
        return 0
    marks = ", ".join("?" for _ in QUARANTINE_COLUMNS)
    before = _count(store.con)
    with Transaction(store.con, store.path):
        store.con.execute(QUARANTINE_DDL).fetchall()
        store.con.executemany(
            f"INSERT INTO quarantine VALUES ({marks}) ON CONFLICT DO NOTHING", rows
        )
    return _count(store.con) - before


def _count(con: duckdb.DuckDBPyConnection) -> int:
    if not _has_table(con):
        return 0
    return int(con.execute("SELECT count(*) FROM quarantine").fetchall()[0][0])


def _has_table(con: duckdb.DuckDBPyConnection) -> bool:
    q = "SELECT count(*) FROM information_schema.tables WHERE table_name = 'quarantine'"
    return bool(con.execute(q).fetchall()[0][0])


def quarantine_frame(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """The ``quarantine`` table ordered by dataset, split and path (empty when absent)."""
    if not _has_table(con):
        return pd.DataFrame(columns=list(QUARANTINE_COLUMNS))
    return con.execute(
        f"SELECT {', '.join(QUARANTINE_COLUMNS)} FROM quarantine "
        "ORDER BY dataset, split, path, image_id"
    ).df()
