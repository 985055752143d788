"""Image paths stay inside the dataset root: no ``..``, no absolute paths, no symlinks out.

A label file is data a user downloaded, not code they wrote: a row whose path is
``../../etc/passwd`` or a symlink pointing out of the dataset must never make crsbench read
(or print) a file outside the folder the user named. The check is lexical first (cheap, every
row), then resolves symlinks once per distinct parent directory and once per file that is
itself a symlink, so a 200k-image dataset costs a few thousand ``realpath`` calls, not 200k.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from crsbench.core.errors import DataError

from .csvio import MAX_LISTED


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _symlinked_files(parents: np.ndarray) -> set[str]:
    """Paths of the directory entries that are symlinks, one listing per parent."""
    links: set[str] = set()
    for parent in parents:
        try:
            with os.scandir(str(parent)) as entries:
                links.update(e.path for e in entries if e.is_symlink())
        except OSError:
            continue
    return links


def outside_rows(paths: np.ndarray, root: Path) -> list[tuple[int, str, str]]:
    """Rows whose image path leaves ``root``: ``(row, path, where it leads)``, in row order."""
    root_text = os.path.normpath(str(root))
    real_root = os.path.realpath(root_text)
    series = pd.Series(np.asarray(paths, dtype=object)).map(os.path.normpath)
    bad: dict[int, tuple[str, str]] = {}
    for row in np.flatnonzero(~series.map(lambda p: _inside(p, root_text)).to_numpy()):
        bad[int(row)] = (str(paths[row]), series[row])
    parents = series.str.rpartition(os.sep)[0]
    real_parent = {p: os.path.realpath(p) for p in parents.unique()}
    for row in np.flatnonzero(~parents.map(lambda p: _inside(real_parent[p], real_root))):
        bad.setdefault(int(row), (str(paths[row]), real_parent[parents[row]]))
    links = _symlinked_files(parents.unique())
    for row in np.flatnonzero(series.isin(links).to_numpy()):
        target = os.path.realpath(series[row])
        if not _inside(target, real_root):
            bad.setdefault(int(row), (str(paths[row]), target))
    return [(row, path, lead) for row, (path, lead) in sorted(bad.items())]


def require_inside_root(paths: np.ndarray, ids: np.ndarray, root: Path, dataset: str) -> None:
    """Raise :class:`DataError` naming the rows whose image path leaves ``root``.

    Parameters
    ----------
    paths, ids : np.ndarray of str
        Absolute image paths and image ids, one per dataset row.
    root : Path
        The dataset root the user named.
    dataset : str
        Dataset name, for the message.
    """
    bad = outside_rows(paths, root)
    if not bad:
        return
    shown = "; ".join(
        f"row {row + 1} (image {ids[row]!r}): {path!r} leads to {lead!r}"
        for row, path, lead in bad[:MAX_LISTED]
    )
    more = f"; ... ({len(bad) - MAX_LISTED} more)" if len(bad) > MAX_LISTED else ""
    raise DataError(
        f"dataset {dataset!r}: {len(bad)} image path(s) leave the dataset root {root} "
        f"('..', an absolute path or a symlink out), which crsbench never reads: {shown}{more}. "
        "Keep the images under the root (the folder adapter accepts allow_outside_root=true "
        "for data you trust)."
    )
