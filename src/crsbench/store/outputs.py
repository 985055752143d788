"""What crsbench may write: one home for output ownership.

A **folder** is crsbench's to write when it does not exist yet, is empty, carries crsbench's
folder marker, or sits directly in a crsbench output directory (the default ``STORE/scores``,
``STORE/analysis``, ``STORE/report``). A non-empty folder that is none of these is refused,
so no file crsbench did not write is ever overwritten; a file where the folder should be,
the file-system root and the home directory are refused too.

A single **file** (``predict --out``, ``verdict --out``, an exported model) may be written
when it is new, or when crsbench wrote it before: the marker of its folder lists it. A
results store's files (``results.duckdb``, its WAL, its lock, any DuckDB database) are never
written this way. Every file is written to a temporary sibling and renamed into place, so a
reader (or a rerun after Ctrl-C) never sees half a file.

The marker ``.crsbench-output`` is JSON: ``scope`` is ``"folder"`` (the whole folder is
crsbench's; a marker without ``scope``, written by older versions, means the same) or
``"files"`` (only the ``files`` it lists are).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from crsbench.core.diskio import disk_error, disk_errors, remove_quietly
from crsbench.core.errors import DiskError, StoreError
from crsbench.store.files import LAST_RUN_FILE, LOCK_FILE, STORE_FILE

MARKER_NAME = ".crsbench-output"
#: The completion marker of a ``crsbench synth`` dataset folder (written last).
SYNTH_MARKER = ".crsbench-synth.json"
#: A results store's own files: never written through :func:`write_output_file`.
STORE_NAMES: tuple[str, ...] = (STORE_FILE, STORE_FILE + ".wal", LOCK_FILE)
#: What a superseded run leaves behind and ``--force-new`` (or a dataset's new revision) moves
#: aside with its store (``cohort.json`` and ``verdict.html``: a cohort profile's).
RUN_OUTPUTS: tuple[str, ...] = (
    STORE_FILE, STORE_FILE + ".wal", "export", "scores", "analysis", "report", LAST_RUN_FILE,
    "cohort.json", "verdict.html", "computed",
)  # fmt: skip
_DUCKDB_MAGIC = b"DUCK"  # bytes 8..12 of every DuckDB database file


def read_claim(folder: Path) -> dict[str, Any] | None:
    """The marker of ``folder`` as a dict (``{}`` when unreadable), or None when absent."""
    marker = folder / MARKER_NAME
    if not marker.is_file():
        return None
    try:
        info = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


def folder_claimed(folder: Path) -> bool:
    """Whether ``folder`` carries crsbench's marker for the whole folder."""
    info = read_claim(folder)
    return info is not None and info.get("scope", "folder") != "files"


def is_marked(folder: Path) -> bool:
    """Whether ``folder`` carries crsbench's folder marker or a results store."""
    return folder_claimed(folder) or (folder / STORE_FILE).is_file()


def refuse_protected(folder: Path) -> None:
    """Refuse the file-system root and the home directory (resolved ``folder``)."""
    if folder == Path(folder.anchor):
        raise StoreError(f"output directory {folder} is the file-system root; choose a folder.")
    if folder == Path.home().resolve():
        raise StoreError(f"output directory {folder} is the home directory; choose a folder in it.")


def _save_claim(folder: Path, info: dict[str, Any]) -> None:
    from crsbench import __version__

    info.setdefault("crsbench", __version__)
    info.setdefault("claimed", datetime.now(timezone.utc).isoformat(timespec="seconds"))
    tmp = folder / f"{MARKER_NAME}.tmp-{os.getpid()}"
    try:
        tmp.write_text(json.dumps(info) + "\n", encoding="utf-8")
        os.replace(tmp, folder / MARKER_NAME)
    except OSError as exc:
        remove_quietly(tmp)
        disk = disk_error(exc, folder / MARKER_NAME, exact=True)
        raise disk or StoreError(f"cannot write crsbench's marker in {folder}: {exc}") from None


def write_marker(folder: Path) -> None:
    """Create ``folder`` and claim it whole with crsbench's marker (once)."""
    with disk_errors(folder):
        folder.mkdir(parents=True, exist_ok=True)
    info = read_claim(folder)
    if info is None or info.get("scope") == "files":
        _save_claim(
            folder, {**(info or {}), "scope": "folder", "files": (info or {}).get("files", [])}
        )


def claim_results_folder(
    folder: Path | str,
    *,
    create: bool = True,
    what: str = "output folder",
    layout: Collection[str] = (),
) -> Path:
    """Make sure crsbench may write its tables, analyses or report into ``folder``.

    With ``create=False`` only the checks run (nothing is written): call :func:`write_marker`
    once the work succeeded, or use :func:`claimed_folder`. ``what`` names the folder in the
    messages (e.g. ``"cache_dir"``); a non-empty folder holding only ``layout`` names (what
    crsbench wrote there before the marker existed) is crsbench's too.

    Returns
    -------
    Path
        The absolute folder, created and marked.

    Raises
    ------
    StoreError
        ``folder`` is a file, the root or home directory, or a non-empty folder crsbench did
        not write (outside a crsbench output directory).
    """
    path = Path(os.path.realpath(Path(folder).expanduser()))
    refuse_protected(path)
    if path.exists() and not path.is_dir():
        raise StoreError(f"{what} {path} is a file; give a folder (new, empty or crsbench's).")
    names = {p.name for p in path.iterdir()} if path.is_dir() else set()
    foreign = bool(names) and not is_marked(path) and not (layout and names <= set(layout))
    if foreign and not is_marked(path.parent):
        raise StoreError(
            f"{what} {path} is not empty and was not written by crsbench (no {MARKER_NAME} "
            "marker); crsbench never writes into a folder it did not claim. Choose a new or "
            "empty folder."
        )
    if create:
        write_marker(path)
    return path


@contextmanager
def claimed_folder(folder: Path | str) -> Iterator[Path]:
    """Claim ``folder`` (:func:`claim_results_folder`) for the duration of a write.

    The marker is written before anything else, so output left by an interruption is
    crsbench's and a rerun proceeds; a folder this call created is removed again when the
    work fails or is interrupted (nothing half-written is left). When the disk refuses a
    write (full, read-only), the files this call wrote are removed too and the error is a
    :class:`~crsbench.core.errors.DiskError` naming the file (or ``folder``).
    """
    path = claim_results_folder(folder, create=False)
    created = not path.exists()
    write_marker(path)
    before = _file_stamps(path)
    try:
        with disk_errors(path):
            yield path
    except BaseException as exc:
        if created:
            shutil.rmtree(path, ignore_errors=True)
        elif isinstance(exc, DiskError):
            _remove_written(path, before)
        raise


def _file_stamps(folder: Path) -> dict[Path, tuple[int, int]]:
    """(size, mtime in ns) of every file under ``folder`` but the marker."""
    return {
        p: (p.stat().st_size, p.stat().st_mtime_ns)
        for p in folder.rglob("*")
        if p.is_file() and p.name != MARKER_NAME
    }


def _remove_written(folder: Path, before: dict[Path, tuple[int, int]]) -> None:
    """Remove the files under ``folder`` that are new or changed since ``before`` (a write the
    disk cut short leaves no file that looks complete)."""
    for path, stamp in _file_stamps(folder).items():
        if before.get(path) != stamp:
            remove_quietly(path)


def refuse_clearing(folder: Path, how: str) -> None:
    """Raise unless crsbench may delete ``folder`` and everything in it.

    Only an empty folder, a folder crsbench claimed whole, or a ``crsbench synth`` dataset
    folder may be cleared; ``how`` names the option that asked (e.g. ``"--overwrite"``).
    """
    if not folder.exists():
        return
    if not folder.is_dir():
        raise StoreError(
            f"{folder} is a file, not a folder crsbench wrote; {how} never deletes it."
        )
    if (
        any(folder.iterdir())
        and not folder_claimed(folder)
        and not (folder / SYNTH_MARKER).is_file()
    ):
        raise StoreError(
            f"{folder} was not written by crsbench (no {MARKER_NAME} or {SYNTH_MARKER} marker); "
            f"{how} only replaces folders crsbench wrote. Move it away or choose another --out."
        )


def _is_store_file(path: Path) -> bool:
    if path.name in STORE_NAMES:
        return True
    try:
        with open(path, "rb") as handle:
            return handle.read(12)[8:12] == _DUCKDB_MAGIC
    except OSError:
        return False


def _every_file_claimed(claim: dict[str, Any]) -> bool:
    """A folder marker of an older crsbench (no file list): every file in it is crsbench's."""
    folder = bool(claim) and claim.get("scope", "folder") == "folder"
    return folder and bool(claim.get("every_file", "files" not in claim))


def _written_by_crsbench(target: Path) -> bool:
    """Whether the marker of ``target``'s folder lists it, or claims every file in it."""
    claim = read_claim(target.parent) or {}
    return _every_file_claimed(claim) or target.name in claim.get("files", [])


def claim_output_file(path: Path | str) -> Path:
    """Check that crsbench may write the file ``path``; write nothing.

    Returns
    -------
    Path
        The absolute path (symbolic links resolved).

    Raises
    ------
    StoreError
        ``path`` is a folder, a results store's file, or an existing file crsbench did not
        write (its folder's marker does not list it).
    """
    target = Path(os.path.realpath(Path(path).expanduser()))
    if target.is_dir():
        raise StoreError(f"{target} is a folder; give the path of a file to write.")
    if _is_store_file(target):
        raise StoreError(
            f"{target} is a results store's file; crsbench never writes over a store. "
            "Choose another file."
        )
    if target.parent.exists() and not target.parent.is_dir():
        raise StoreError(f"{target.parent} is a file; {target} cannot be written inside it.")
    if target.exists() and not _written_by_crsbench(target):
        raise StoreError(
            f"{target} exists and was not written by crsbench; crsbench never overwrites "
            "files it did not write. Choose a new file name, or move that file away."
        )
    return target


def _claim_file(target: Path) -> None:
    """List ``target`` in its folder's marker (a ``files`` claim when the folder has none)."""
    info = read_claim(target.parent)
    info = {"scope": "files"} if info is None else dict(info)
    if _every_file_claimed(info):
        info["every_file"] = True  # an older marker keeps its meaning once it lists files
    files = list(info.get("files", []))
    if target.name not in files:
        _save_claim(target.parent, {**info, "files": [*files, target.name]})


def write_output_file(path: Path | str, write: Callable[[Path], None]) -> Path:
    """Write one output file where :func:`claim_output_file` allows it, atomically.

    Parameters
    ----------
    path : Path or str
        The file to write; its folder is created.
    write : callable
        ``write(tmp)`` writes the whole content to ``tmp`` (a sibling of ``path``), which is
        then renamed to ``path``; it is removed when ``write`` fails or is interrupted.

    Returns
    -------
    Path
        The absolute path written.

    Raises
    ------
    StoreError
        ``path`` may not be written (see :func:`claim_output_file`), or the disk refused it.
    """
    target = claim_output_file(path)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _claim_file(target)  # before the rename: a file in place is always listed
        write(tmp)
        os.replace(tmp, target)
    except OSError as exc:
        remove_quietly(tmp)
        disk = disk_error(exc, target, exact=True)
        raise disk or StoreError(f"cannot write {target}: {exc.strerror or exc}") from None
    except BaseException:
        remove_quietly(tmp)
        raise
    return target


def move_run_aside(out: Path, label: str) -> list[tuple[Path, Path]]:
    """Move a superseded run's store and derived folders to ``out/superseded/<label>-<utc>/``.

    Returns the ``(from, to)`` pairs moved, in :data:`RUN_OUTPUTS` order.
    """
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    target = out / "superseded" / f"{label}-{stamp}"
    moved: list[tuple[Path, Path]] = []
    for name in RUN_OUTPUTS:
        source = out / name
        if source.exists():
            with disk_errors(target / name):
                target.mkdir(parents=True, exist_ok=True)
                shutil.move(str(source), str(target / name))
            moved.append((source, target / name))
    return moved
