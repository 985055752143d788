"""Refusing a write that would change a stored run: the checks and the message.

The store is append-only: a ``run_key`` already stored may be appended again only with the
same payload (every column but the volatile ones). These helpers run on the batch registered
as ``_incoming`` inside the writer's transaction.
"""

from __future__ import annotations

from typing import Any

import duckdb

from crsbench.core.errors import StoreError
from crsbench.store.columns import IDENTITY_COLUMNS, PAYLOAD_COLUMNS


def first_row(cur: Any) -> Any:
    """First row of a result, fetched to the end (DuckDB refuses new work otherwise)."""
    rows = cur.fetchall()
    return rows[0] if rows else None


def batch_repeats_keys(con: duckdb.DuckDBPyConnection, n_rows: int) -> bool:
    """Whether the ``_incoming`` batch repeats a ``run_key`` (with the same payload).

    Raises
    ------
    StoreError
        The batch holds different payloads for one ``run_key``.
    """
    distinct = con.execute("SELECT count(DISTINCT run_key) FROM _incoming").fetchall()
    if distinct[0][0] == n_rows:
        return False
    payload = ", ".join(PAYLOAD_COLUMNS)
    dup = con.execute(
        f"SELECT run_key FROM (SELECT DISTINCT {payload} FROM _incoming) "
        "GROUP BY run_key HAVING count(*) > 1 LIMIT 5"
    ).fetchall()
    if dup:
        raise StoreError(
            "one batch holds different payloads for the same run_key: "
            + ", ".join(k[:12] for (k,) in dup)
        )
    return True


def conflict_message(con: duckdb.DuckDBPyConnection, keys: list[str]) -> str:
    """The refusal naming each stored run of ``keys`` and every column the batch changes."""
    lines = []
    for key in keys:
        old = _row(con, "runs", key)
        new = _row(con, "_incoming", key)
        diff = [
            c for c in PAYLOAD_COLUMNS if old[c] != new[c] and not (_nan(old[c]) and _nan(new[c]))
        ]
        ident = ", ".join(f"{c}={old[c]}" for c in IDENTITY_COLUMNS)
        lines.append(
            f"run_key {key[:12]} ({ident}): "
            + "; ".join(f"{c} stored {old[c]!r} vs new {new[c]!r}" for c in diff)
        )
    return (
        "refusing to overwrite stored run records with different values (the store is "
        "append-only; nothing was written):\n  " + "\n  ".join(lines)
    )


def _row(con: duckdb.DuckDBPyConnection, table: str, key: str) -> dict[str, Any]:
    cur = con.execute(f"SELECT * FROM {table} WHERE run_key = ? LIMIT 1", [key])
    names = [d[0] for d in cur.description]
    return dict(zip(names, first_row(cur), strict=True))


def _nan(x: Any) -> bool:
    return x is None or (isinstance(x, float) and x != x)
