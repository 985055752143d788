"""Pieces shared by the chest X-ray shift-target adapters (NIH ChestX-ray14, PadChest, VinDr-CXR).

Each target is harmonised to CheXpert's 14 labels through a versioned label map (option
``label_map``), keeps frontal views by default (``frontal_only``), groups rows by patient and
records ``sex`` (``Male``/``Female``/blank), ``age`` (years) and ``view`` in its metadata.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from crsbench.core.errors import ConfigError, DataError

from .base import Dataset, DatasetCard, compute_revision
from .chexpert import CHEXPERT_LABELS
from .csvio import MAX_LISTED
from .files import listed_files
from .labelmap import LabelMap, load_label_map

FRONTAL_VIEWS: tuple[str, ...] = ("PA", "AP")
SEX_WORDS = {"M": "Male", "F": "Female", "MALE": "Male", "FEMALE": "Female"}


def require_bool(option: str, value: Any) -> bool:
    """``value`` if it is a bool, else :class:`ConfigError` naming the option."""
    if not isinstance(value, bool):
        raise ConfigError(f"{option} must be a bool. Got {value!r} instead.")
    return value


def label_map_for(options: dict[str, Any], dataset: str) -> LabelMap:
    """The label map named by ``options["label_map"]``; it must be one for ``dataset``."""
    name = options["label_map"]
    if not isinstance(name, str) or not name.startswith(f"{dataset}_v"):
        raise ConfigError(
            f"label_map must name a {dataset} map such as '{dataset}_v1'. Got {name!r} instead."
        )
    return load_label_map(name)


def sex_words(cells: pd.Series) -> np.ndarray:
    """``M``/``F`` (any case, spaces) → ``Male``/``Female``; anything else → blank."""
    return cells.str.strip().str.upper().map(SEX_WORDS).fillna("").to_numpy(dtype=str)


def locate(names: pd.Series, folders: list[Path], fallback: Path) -> np.ndarray:
    """Absolute path of each file name: the folder whose listing holds it, else ``fallback``.

    One ``os.scandir`` per folder; a name no folder lists gets ``fallback/name`` (reported
    missing by ``check_files`` / ``datasets check``).
    """
    folder_of: dict[str, str] = {}
    for folder in folders:
        for path in listed_files(np.array([str(folder)])):
            folder_of.setdefault(path.rpartition(os.sep)[2], str(folder))
    dirs = names.map(folder_of).to_numpy(dtype=object)
    dirs[pd.isna(dirs)] = str(fallback)
    return (dirs + os.sep + names.to_numpy(dtype=object)).astype(str)


def drop_note(what: str, rows: np.ndarray, ids: pd.Series) -> str:
    """``"dropped N row(s) <what>: id1, id2, ..."`` (first ids listed)."""
    shown = ", ".join(str(i) for i in ids.iloc[rows[:MAX_LISTED]])
    more = ", ..." if len(rows) > MAX_LISTED else ""
    return f"dropped {len(rows)} row(s) {what}: {shown}{more}" if len(rows) else f"no row {what}"


def view_filter(views: pd.Series, frontal_only: bool, allowed: tuple[str, ...]) -> np.ndarray:
    """Boolean keep-mask of the rows whose view is in ``allowed`` (all rows when not filtering)."""
    if not frontal_only:
        return np.ones(len(views), dtype=bool)
    return views.isin(list(allowed)).to_numpy()


def require_rows(frame: pd.DataFrame, source: Path, what: str) -> None:
    """Raise :class:`DataError` when no row is left after a filter."""
    if len(frame) == 0:
        raise DataError(f"{source}: no images left after {what}.")


def build_dataset(
    name: str,
    root: Path,
    frame: pd.DataFrame,
    labels: np.ndarray,
    provided: tuple[str, ...],
    metadata_columns: list[str],
    label_files: list[Path],
    options: dict[str, Any],
    card: DatasetCard,
    notes: list[str],
) -> Dataset:
    """The :class:`Dataset` of a shift target (``frame`` has image_id, path and group)."""
    return Dataset(
        name=name,
        root=root,
        image_ids=frame["image_id"].to_numpy(dtype=str),
        paths=frame["path"].to_numpy(dtype=str),
        labels=labels,
        label_names=CHEXPERT_LABELS,
        groups=frame["group"].to_numpy(dtype=str),
        task="multilabel",
        metadata=frame[metadata_columns].reset_index(drop=True),
        options=options,
        revision=compute_revision(name, label_files, options),
        card=card,
        notes=tuple(notes),
        provided_labels=provided,
    )
