"""Folders that ``score``, ``analyze``, ``report`` (and ``run``) may write into, and moving a
superseded run's outputs aside.

A folder is crsbench's to write when it does not exist yet, is empty, carries crsbench's
marker file, or sits directly in a crsbench output directory (the default ``STORE/scores``,
``STORE/analysis``, ``STORE/report``). A non-empty folder that is none of these is refused,
so no file crsbench did not write is ever overwritten; a file where the folder should be,
the file-system root and the home directory are refused too.
"""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

from crsbench.core.errors import StoreError
from crsbench.store.files import LAST_RUN_FILE, STORE_FILE

MARKER_NAME = ".crsbench-output"
#: What a superseded run leaves behind and ``--force-new`` moves aside with its store.
RUN_OUTPUTS: tuple[str, ...] = (
    STORE_FILE, STORE_FILE + ".wal", "export", "scores", "analysis", "report", LAST_RUN_FILE,
)  # fmt: skip


def is_marked(folder: Path) -> bool:
    """Whether ``folder`` carries crsbench's marker or a results store."""
    return (folder / MARKER_NAME).is_file() or (folder / STORE_FILE).is_file()


def refuse_protected(folder: Path) -> None:
    """Refuse the file-system root and the home directory (resolved ``folder``)."""
    if folder == Path(folder.anchor):
        raise StoreError(f"output directory {folder} is the file-system root; choose a folder.")
    if folder == Path.home().resolve():
        raise StoreError(f"output directory {folder} is the home directory; choose a folder in it.")


def write_marker(folder: Path) -> None:
    """Create ``folder`` and crsbench's marker in it (once)."""
    folder.mkdir(parents=True, exist_ok=True)
    marker = folder / MARKER_NAME
    if not marker.exists():
        from crsbench import __version__

        stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
        marker.write_text(json.dumps({"crsbench": __version__, "claimed": stamp}) + "\n")


def claim_results_folder(folder: Path | str, *, create: bool = True) -> Path:
    """Make sure crsbench may write its tables, analyses or report into ``folder``.

    With ``create=False`` only the checks run (nothing is written): call :func:`write_marker`
    once the work succeeded, so a refused command leaves no folder behind.

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
        raise StoreError(
            f"output folder {path} is a file; give a folder (new, empty or crsbench's)."
        )
    foreign = path.is_dir() and any(path.iterdir()) and not is_marked(path)
    if foreign and not is_marked(path.parent):
        raise StoreError(
            f"output folder {path} is not empty and was not written by crsbench; crsbench never "
            "overwrites files it did not write. Choose a new or empty folder."
        )
    if create:
        write_marker(path)
    return path


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
            target.mkdir(parents=True, exist_ok=True)
            shutil.move(str(source), str(target / name))
            moved.append((source, target / name))
    return moved
