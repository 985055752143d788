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

from .csvio import MAX_LISTED, row_list


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


def resolved_paths(paths: np.ndarray) -> np.ndarray:
    """The file each path names: its folder resolved (``..``, ``.``, symlinks) once per
    distinct folder, then a file that is itself a symlink resolved to its target.

    Two rows whose results are equal name the same file, however they are spelled.
    """
    series = pd.Series(np.asarray(paths, dtype=object), dtype=object)
    split = series.str.rpartition(os.sep)
    real_parent = {p: os.path.realpath(p or os.sep) for p in split[0].unique()}
    out = split[0].map(real_parent).str.rstrip(os.sep) + os.sep + split[2]
    odd = split[2].isin(["", ".", ".."]).to_numpy()
    links = _symlinked_files(np.asarray(list(set(real_parent.values())), dtype=object))
    for row in np.flatnonzero(odd | out.isin(links).to_numpy()):
        out.iloc[row] = os.path.realpath(series.iloc[row])
    return out.to_numpy(dtype=str)


def outside_rows(
    paths: np.ndarray, root: Path, resolved: np.ndarray | None = None
) -> list[tuple[int, str, str]]:
    """Rows whose image path leaves ``root``: ``(row, path, where it leads)``, in row order.

    ``resolved`` is :func:`resolved_paths` of ``paths`` (computed when not given).
    """
    root_text = os.path.normpath(str(root))
    real_root = os.path.realpath(root_text)
    lexical = pd.Series(np.asarray(paths, dtype=object)).map(os.path.normpath)
    real = resolved_paths(paths) if resolved is None else resolved
    bad: dict[int, tuple[str, str]] = {}
    for i in np.flatnonzero(~lexical.map(lambda p: _inside(p, root_text)).to_numpy()):
        bad[int(i)] = (str(paths[i]), lexical[i])
    for row, lead in enumerate(real):
        if row not in bad and not _inside(lead, real_root):
            bad[row] = (str(paths[row]), str(lead))
    return [(row, path, lead) for row, (path, lead) in sorted(bad.items())]


def require_inside_root(
    paths: np.ndarray, ids: np.ndarray, root: Path, dataset: str, resolved: np.ndarray | None = None
) -> None:
    """Raise :class:`DataError` naming the rows whose image path leaves ``root``.

    Parameters
    ----------
    paths, ids : np.ndarray of str
        Absolute image paths and image ids, one per dataset row.
    root : Path
        The dataset root the user named.
    dataset : str
        Dataset name, for the message.
    resolved : np.ndarray of str, optional
        :func:`resolved_paths` of ``paths``, when already computed.
    """
    bad = outside_rows(paths, root, resolved)
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


def require_distinct_files(
    paths: np.ndarray, ids: np.ndarray, resolved: np.ndarray, dataset: str
) -> None:
    """Raise :class:`DataError` when two rows name the same file in different spellings
    (``a/../a/x.png`` and ``a/x.png``, or a symlink and its target): a file listed twice
    could land in two splits.

    Parameters
    ----------
    paths, ids : np.ndarray of str
        Image paths as listed and image ids, one per dataset row.
    resolved : np.ndarray of str
        :func:`resolved_paths` of ``paths``.
    dataset : str
        Dataset name, for the message.
    """
    series = pd.Series(np.asarray(resolved, dtype=object))
    rows = np.flatnonzero(series.duplicated(keep=False).to_numpy())
    if len(rows) == 0:
        return
    target = str(series.iloc[int(rows[0])])
    same = np.flatnonzero((series == target).to_numpy())
    shown = " and ".join(
        f"row {r + 1} (image {str(ids[r])!r}, path {str(paths[r])!r})" for r in same[:3]
    )
    raise DataError(
        f"dataset {dataset!r}: {shown} name the same file {target!r} (paths are compared after "
        f"resolving '..', '.' and symlinks). {len(rows)} row(s) share a file in total (rows "
        f"{row_list(rows)}). List each image once: a file listed twice could land in two "
        "splits."
    )
