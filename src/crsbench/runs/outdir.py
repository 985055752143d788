"""Which output directories are crsbench's (moving a superseded run aside:
:func:`crsbench.store.outputs.move_run_aside`).

An output directory is crsbench's when it is empty (or new), or when it carries crsbench's
marker file (written when crsbench first claims it) or a results store with its ``meta``
table (stores written before the marker existed). Anything else is refused, unless the
caller forces it; even then no file crsbench did not write is ever overwritten: the claim is
refused when one of crsbench's own names is already taken in that directory. The file-system
root, the home directory and the dataset roots (and anything inside them) are always refused.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from crsbench.core.errors import StoreError
from crsbench.features.cache import CACHE_LAYOUT
from crsbench.store.files import LAST_RUN_FILE, LOCK_FILE, STORE_FILE
from crsbench.store.outputs import (
    MARKER_NAME,
    claim_results_folder,
    folder_claimed,
    refuse_protected,
    write_marker,
)
from crsbench.store.reader import is_results_store

#: Everything crsbench writes directly under an output directory (``cohort.json`` and
#: ``verdict.html``: a cohort profile's).
OWN_NAMES: tuple[str, ...] = (
    STORE_FILE, STORE_FILE + ".wal", LOCK_FILE, MARKER_NAME, "cache", "export", "scores",
    "analysis", "report", LAST_RUN_FILE, "data", "superseded", "lora", "damaged",
    "cohort.json", "verdict.html",
)  # fmt: skip
_DIRECTORIES = frozenset(
    {"cache", "export", "scores", "analysis", "report", "data", "superseded", "lora", "damaged"}
)


def _is_within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _has_store(out: Path) -> bool:
    return is_results_store(out / STORE_FILE)


def is_crsbench_output(out: Path) -> bool:
    """Whether ``out`` carries crsbench's marker or a crsbench results store."""
    return folder_claimed(out) or _has_store(out)


def _refuse_protected(out: Path, dataset_roots: Iterable[Path]) -> None:
    refuse_protected(out)
    for root in dataset_roots:
        real = Path(os.path.realpath(root))
        if _is_within(out, real):
            raise StoreError(
                f"output directory {out} is inside the dataset root {real}; crsbench never "
                "writes into a dataset. Choose a folder outside it."
            )


def _check_own_names(out: Path) -> None:
    """Files or folders of crsbench's names must have the kind crsbench writes."""
    for name in OWN_NAMES:
        path = out / name
        if path.exists() and (name in _DIRECTORIES) != path.is_dir():
            kind = "a file" if path.is_file() else "a folder" if path.is_dir() else "not a file"
            raise StoreError(
                f"{path} is {kind}, where crsbench keeps its "
                f"{'folder' if name in _DIRECTORIES else 'file'} {name!r}; move it away "
                "or choose another output directory."
            )


def check_output_dir(
    out: Path | str, *, dataset_roots: Iterable[Path] = (), force: bool = False
) -> Path:
    """Raise when ``out`` is not crsbench's to write; write nothing. Returns the absolute path.

    The checks of :func:`claim_output_dir`, run before the preflight so that a refused run
    leaves no folder behind.
    """
    path = Path(os.path.realpath(Path(out).expanduser()))
    _refuse_protected(path, dataset_roots)
    if path.exists() and not path.is_dir():
        raise StoreError(f"output directory {path} is a file; give a folder (new or crsbench's).")
    if path.is_dir() and any(path.iterdir()) and not is_crsbench_output(path):
        taken = sorted(p.name for p in path.iterdir() if p.name in OWN_NAMES)
        if not force:
            raise StoreError(
                f"output directory {path} is not empty and was not written by crsbench "
                f"(no {MARKER_NAME} marker, no results store). Choose a new or empty folder, "
                "or pass --force to add crsbench's files beside what is there."
            )
        if taken:
            raise StoreError(
                f"output directory {path} already holds {', '.join(taken)}, not written by "
                "crsbench; even with --force crsbench never overwrites files it did not write."
            )
    if path.is_dir():
        _check_own_names(path)
    return path


def claim_output_dir(
    out: Path | str, *, dataset_roots: Iterable[Path] = (), force: bool = False
) -> Path:
    """Make sure ``out`` is crsbench's to write, create it, and mark it.

    Parameters
    ----------
    out : Path or str
        The output directory (``output_dir`` / ``--out``).
    dataset_roots : iterable of Path
        Roots of the run's datasets: never an output directory, nor anything inside one.
    force : bool
        Accept an existing non-empty directory without crsbench's marker, provided none of
        crsbench's own names is taken in it (nothing is ever overwritten).

    Returns
    -------
    Path
        The absolute output directory, created, with crsbench's marker in it.

    Raises
    ------
    StoreError
        A protected or foreign directory, a file where the directory should be, or one of
        crsbench's names taken by something else.
    """
    path = check_output_dir(out, dataset_roots=dataset_roots, force=force)
    write_marker(path)
    return path


def claim_cache_dir(cache_dir: Path | str | None, *, create: bool) -> None:
    """A configured ``cache_dir`` is written only when it is crsbench's: new, empty, marked,
    or holding only a feature cache's layout; ``create`` claims it (marker), else only checks.

    Raises
    ------
    StoreError
        ``cache_dir`` is a file, a protected folder, or a folder crsbench did not write.
    """
    if cache_dir is not None:
        claim_results_folder(cache_dir, create=create, what="cache_dir", layout=CACHE_LAYOUT)
