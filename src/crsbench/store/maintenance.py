"""What every ``crsbench store`` command does first: find the store's folder and take its lock.

A maintenance command refuses a folder crsbench did not write, and never touches a store
that another process holds (its lock names the process).
"""

from __future__ import annotations

from pathlib import Path

from crsbench.core.errors import StoreError
from crsbench.store.compact import CompactResult, compact_store_file
from crsbench.store.files import STORE_FILE, locked_store
from crsbench.store.lock import StoreLock
from crsbench.store.outputs import MARKER_NAME, is_marked


def store_folder(out_dir: Path | str, command: str) -> Path:
    """The store's folder, refused when missing, a file, or not crsbench's (``command``:
    the command named in the message, e.g. ``crsbench store repair``)."""
    folder = Path(out_dir).expanduser().absolute()
    if not folder.is_dir():
        what = "is a file" if folder.exists() else "does not exist"
        raise StoreError(
            f"{folder} {what}; give the output directory that holds {STORE_FILE} "
            "(`crsbench run --out`)."
        )
    if not is_marked(folder):
        raise StoreError(
            f"{folder} holds no results store ({STORE_FILE}) and was not written by crsbench "
            f"(no {MARKER_NAME} marker); `{command}` changes nothing there."
        )
    return folder


def maintenance_lock(folder: Path, command: str) -> StoreLock:
    """The store's single-writer lock, taken (refused, naming the holder, when in use)."""
    lock = StoreLock(folder)
    try:
        lock.acquire()
    except StoreError as exc:
        raise StoreError(f"{exc} `{command}` never touches a store in use.") from None
    return lock


def compact_store(out_dir: Path | str, *, force: bool = False) -> CompactResult:
    """``crsbench store compact``: give the free blocks of the store in ``out_dir`` back to
    the disk (:func:`crsbench.store.compact.compact_store_file`) under its lock.

    Raises
    ------
    StoreError
        The folder is missing or not crsbench's, holds no store, or the store is in use.
    DiskError
        The disk refused the copy; the store is unchanged.
    """
    command = "crsbench store compact"
    folder = store_folder(out_dir, command)
    path = folder / STORE_FILE
    if not path.is_file():
        raise StoreError(f"no results store at {path}. Run `crsbench run` first.")
    lock = maintenance_lock(folder, command)
    try:
        import duckdb

        try:
            return compact_store_file(path, force=force)
        except duckdb.Error as exc:
            if "lock" in str(exc).lower():
                raise locked_store(path) from None
            raise StoreError(f"cannot compact {path}: {exc}") from None
    finally:
        lock.release()
