"""Reading the results store file, and the one message for a damaged one.

Every reader of ``results.duckdb`` (the scoring tables, the report, the writer when it opens
an existing store) goes through :func:`read_tables` or :func:`damaged_store`, so a store that
DuckDB cannot read (truncated, overwritten, half-copied) is always reported the same way:
what is wrong, and the command that recovers.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from crsbench.core.errors import StoreError

if TYPE_CHECKING:
    import pandas as pd

STORE_FILE = "results.duckdb"
LOCK_FILE = ".lock"


def locked_store(path: Path | str) -> StoreError:
    """The error for a store that a running ``crsbench run`` holds, naming that process."""
    import json

    path = Path(path)
    try:
        info = json.loads((path.parent / LOCK_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        info = {}
    who = (
        f"pid {info.get('pid')} on host {info.get('hostname')!r}, started "
        f"{info.get('started_at')}: {info.get('command', '?')}"
        if isinstance(info, dict) and info.get("pid")
        else "another process"
    )
    return StoreError(
        f"results store {path} is being written by a running crsbench ({who}); wait for it "
        "to finish (or stop it), then try again."
    )


def damaged_store(path: Path | str, exc: BaseException) -> StoreError:
    """The error for a store file DuckDB cannot read, naming the way to recover."""
    path = Path(path)
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    folder = path.parent
    return StoreError(
        f"results store {path} is damaged and cannot be read ({reason}). To recover, run "
        f"`crsbench store repair --store {folder}`: it moves the damaged file to "
        f"{folder / 'damaged'} and rebuilds the store from the last export "
        f"({folder / 'export'}); `crsbench run` then recomputes anything newer from the "
        "feature cache."
    )


def read_tables(path: Path | str, tables: tuple[str, ...]) -> dict[str, pd.DataFrame]:
    """Read whole tables of a store file read-only; absent tables are left out.

    Raises
    ------
    StoreError
        The file is missing, locked by a writer, or damaged (with the way to recover).
    """
    return read_queries(path, {t: f'SELECT * FROM "{t}"' for t in tables}, needs=None)


def read_queries(
    path: Path | str, queries: dict[str, str], needs: dict[str, tuple[str, ...]] | None
) -> dict[str, pd.DataFrame]:
    """Run read-only SELECT ``queries`` (name → SQL built by crsbench, never user text) on a
    store file; a query whose tables (``needs[name]``, default: the table called ``name``)
    are not all present is left out of the result.

    Raises
    ------
    StoreError
        The file is missing, locked by a writer, or damaged (with the way to recover).
    """
    import duckdb

    path = Path(path)
    if not path.is_file():
        raise StoreError(
            f"results store {path} must exist. It does not: run `crsbench run` first, "
            f"or pass the directory that holds {STORE_FILE}."
        )
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        if "lock" in str(exc).lower():
            raise locked_store(path) from None
        raise damaged_store(path, exc) from None
    try:
        present = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables")
                   .fetchall()}  # fmt: skip
        wanted = needs or {}
        return {
            name: con.execute(sql).df()
            for name, sql in queries.items()
            if set(wanted.get(name, (name,))) <= present
        }
    except duckdb.Error as exc:
        raise damaged_store(path, exc) from None
    finally:
        con.close()


#: The summary of the last ``crsbench run`` next to the store (stage times, skipped cells).
LAST_RUN_FILE = "last_run.json"


def skipped_cells(store_dir: Path | str) -> dict[tuple[str, str], str]:
    """(encoder, dataset) → reason for the cells the last ``run --skip-missing`` left out.

    Read from ``last_run.json`` next to the store; an absent or unreadable file gives ``{}``.
    """
    import json

    path = Path(store_dir) / LAST_RUN_FILE
    try:
        rows = json.loads(path.read_text(encoding="utf-8")).get("skipped_cells", [])
    except (OSError, ValueError, AttributeError):
        return {}
    return {
        (str(r["encoder"]), str(r["dataset"])): str(r.get("reason", ""))
        for r in rows
        if isinstance(r, dict) and "encoder" in r and "dataset" in r
    }
