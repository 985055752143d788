"""The files of a results store, named once, and the errors for a locked or damaged one.

Every reader and the writer report a store that DuckDB cannot open the same way (what is
wrong, and the command that recovers) through :func:`locked_store` and :func:`damaged_store`.
"""

from __future__ import annotations

import json
from pathlib import Path

from crsbench.core.diskio import disk_error_in_text
from crsbench.core.errors import CrsbenchError, StoreError

#: The DuckDB file of a store, inside its output directory.
STORE_FILE = "results.duckdb"
#: The single-writer lock file (:class:`crsbench.store.lock.StoreLock`).
LOCK_FILE = ".lock"
#: The summary of the last ``crsbench run`` next to the store (stage times, skipped cells).
LAST_RUN_FILE = "last_run.json"


def locked_store(path: Path | str) -> StoreError:
    """The error for a store that a running ``crsbench run`` holds, naming that process."""
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


def damaged_store(path: Path | str, exc: BaseException, writing: bool = False) -> CrsbenchError:
    """The error for a store file DuckDB cannot read, naming the way to recover; a
    :class:`~crsbench.core.errors.DiskError` when the disk refused a write (full, read-only,
    or, with ``writing``, no permission)."""
    disk = disk_error_in_text(exc, path)
    if disk is not None and (writing or disk.kind != "permission"):
        return disk
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


def refuse_newer_schema(path: Path | str, version: object) -> None:
    """Raise when a store's ``meta.schema_version`` is newer than this crsbench reads (every
    reader and the writer refuse it alike: its tables may mean something else)."""
    from crsbench.store.columns import SCHEMA_VERSION

    try:
        newer = int(version) > SCHEMA_VERSION  # type: ignore[call-overload]
    except (TypeError, ValueError):
        newer = True
    if newer:
        raise StoreError(
            f"results store {path} has schema version {version}, newer than this crsbench "
            f"reads ({SCHEMA_VERSION}). Upgrade crsbench."
        )
