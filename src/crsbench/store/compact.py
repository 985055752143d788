"""Give a results store's free blocks back to the disk.

DuckDB checkpoints while a grid is written (one transaction per cell); each rewrites the
blocks a cell changed and keeps the old ones as free blocks inside the file, to be reused by
later writes. A finished store carries them to the end: about half of a paper-size store's
file. :func:`compact_store_file` copies the store's tables into a fresh file beside it
(DuckDB's ``COPY FROM DATABASE``), checks that every table holds the same rows, and renames
it over the store; the writer does this on a clean close when the free blocks are worth it
(:data:`MIN_FREE_SHARE`, :data:`MIN_FREE_BYTES`), and ``crsbench store compact`` on demand.
The copy needs as much free disk as the store's used blocks: when the disk refuses it (full,
read-only) the store is left as it was and only the copy is removed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from crsbench.core.diskio import disk_error_in_text, remove_quietly
from crsbench.core.errors import StoreError

log = logging.getLogger(__name__)

#: A clean close compacts when at least this share of the file is free blocks ...
MIN_FREE_SHARE = 0.25
#: ... and they are at least this many bytes (small stores are never copied).
MIN_FREE_BYTES = 64 << 20


@dataclass(frozen=True)
class CompactResult:
    """What :func:`compact_store_file` found and did (sizes in bytes)."""

    path: Path
    bytes_before: int
    bytes_after: int
    free_blocks: int
    total_blocks: int
    compacted: bool

    def line(self) -> str:
        """One sentence for the console."""
        mib = 1 << 20
        if not self.compacted:
            return (f"{self.path}: {self.bytes_before / mib:,.1f} MiB, {self.free_blocks:,} of "
                    f"{self.total_blocks:,} blocks free; left as it is.")  # fmt: skip
        return (f"{self.path}: {self.bytes_before / mib:,.1f} MiB -> "
                f"{self.bytes_after / mib:,.1f} MiB ({self.free_blocks:,} of "
                f"{self.total_blocks:,} blocks were free).")  # fmt: skip


def free_blocks(path: Path) -> tuple[int, int]:
    """``(free, total)`` blocks of the DuckDB file ``path`` (opened read-only)."""
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        row = con.execute("SELECT free_blocks, total_blocks FROM pragma_database_size()").fetchone()
    finally:
        con.close()
    assert row is not None
    return int(row[0]), int(row[1])


def _why_not(path: Path) -> str:
    """Why ``path`` is never compacted ("" when it may be): a write-ahead log beside it (not
    checkpointed), or a link (the rename would put a file where the user's link was)."""
    if path.is_symlink():
        return "it is a symbolic link"
    if Path(f"{path}.wal").exists():
        return "a write-ahead log is beside it"
    return "" if path.is_file() else "it is not a file"


def worth_compacting(path: Path) -> bool:
    """Whether the free blocks of ``path`` reach :data:`MIN_FREE_SHARE` and
    :data:`MIN_FREE_BYTES` (never when :func:`_why_not` names a reason)."""
    if _why_not(path):
        return False
    free, total = free_blocks(path)
    share = free / total if total else 0.0
    return share >= MIN_FREE_SHARE and free * path.stat().st_size / max(total, 1) >= MIN_FREE_BYTES


def _literal(path: Path) -> str:
    """``path`` as an SQL string literal (a quote in a folder name doubled)."""
    return "'" + str(path).replace("'", "''") + "'"


def _copy(source: Path, target: Path) -> None:
    """Every table of ``source`` into the new file ``target`` (DuckDB's own copy)."""
    import duckdb

    con = duckdb.connect()
    try:
        con.execute(f"ATTACH {_literal(source)} AS old (READ_ONLY)")
        con.execute(f"ATTACH {_literal(target)} AS new")
        con.execute("COPY FROM DATABASE old TO new")
    finally:
        con.close()


def _check_same_rows(source: Path, target: Path) -> None:
    """Raise unless ``target`` has every table of ``source`` with as many rows."""
    import duckdb

    con = duckdb.connect()
    try:
        con.execute(f"ATTACH {_literal(source)} AS old (READ_ONLY)")
        con.execute(f"ATTACH {_literal(target)} AS new (READ_ONLY)")
        names = con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = 'old' ORDER BY 1"
        ).fetchall()
        for (name,) in names:
            old = con.execute(f'SELECT count(*) FROM old."{name}"').fetchone()
            new = con.execute(f'SELECT count(*) FROM new."{name}"').fetchone()
            if old != new:
                raise StoreError(
                    f"compacting {source}: table {name} copied {new[0] if new else 0} rows of "
                    f"{old[0] if old else 0}; the store was not replaced."
                )
    finally:
        con.close()


def _sync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def compact_store_file(path: Path | str, *, force: bool = False) -> CompactResult:
    """Copy the closed store file ``path`` into a fresh file and rename it over ``path``
    when :func:`worth_compacting` (always with ``force``). The caller holds the store's lock
    and has closed every connection to it.

    Raises
    ------
    DiskError
        The disk refused the copy (full, read-only); ``path`` is unchanged.
    StoreError
        ``path`` is a link or has a write-ahead log beside it, or a table's rows differ
        after the copy; ``path`` is unchanged.
    """
    path = Path(path)
    if why := _why_not(path):
        raise StoreError(f"cannot compact {path}: {why}.")
    for stale in path.parent.glob(f".{path.name}.compacting-*"):  # a copy a killed run left
        remove_quietly(stale)
    free, total = free_blocks(path)
    before = path.stat().st_size
    if not (force or worth_compacting(path)):
        return CompactResult(path, before, before, free, total, compacted=False)
    tmp = path.with_name(f".{path.name}.compacting-{os.getpid()}")
    try:
        _copy(path, tmp)
        _check_same_rows(path, tmp)
        _sync(tmp)
        os.chmod(tmp, stat.S_IMODE(path.stat().st_mode))
        os.replace(tmp, path)
    except Exception as exc:
        disk = disk_error_in_text(exc, path.parent, needed=before - free * before // max(total, 1))
        if disk is not None:
            raise disk from None
        raise
    finally:
        remove_quietly(tmp)
        remove_quietly(Path(f"{tmp}.wal"))
    with contextlib.suppress(OSError):  # renamed already: a folder that cannot be synced
        _sync(path.parent)
    return CompactResult(path, before, path.stat().st_size, free, total, compacted=True)


def compact_quietly(path: Path) -> CompactResult | None:
    """:func:`compact_store_file` on a clean close: a refusing disk, a failed copy or any
    other error leaves the store as it is with one warning (the store is complete either
    way; Ctrl-C still interrupts); None when not worth it."""
    try:
        if not worth_compacting(path):
            return None
        result = compact_store_file(path)
    except Exception as exc:  # optional work on a complete store: never fail the command
        log.warning("left %s uncompacted: %s", path, exc)
        return None
    log.info(result.line())
    return result
