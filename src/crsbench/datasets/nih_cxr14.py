"""NIH ChestX-ray14 (chest X-ray, 8-bit PNG), a shift target harmonised to CheXpert's 14.

``Data_Entry_2017_v2020.csv`` (or ``Data_Entry_2017.csv``; ``Image Index``, ``Finding
Labels`` with ``|``-separated findings or ``No Finding``, ``Patient ID``, ``Patient Age``,
``Patient Gender``, ``View Position``, ...), images in ``images_001/images/`` …
``images_012/images/`` or one ``images/`` folder, and the official ``train_val_list.txt`` /
``test_list.txt`` where present (``official_split`` train / test). Findings map to CheXpert
labels through the ``label_map`` (default ``nih_cxr14_v1``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from crsbench.core.errors import DataError

from .base import DATASETS, Dataset, DatasetAdapter, DatasetCard
from .chexpert import CHEXPERT_LABELS
from .csvio import raise_bad_rows, raise_duplicates, read_csv, row_list
from .files import require_files
from .labelmap import load_label_map
from .shift_common import (
    FRONTAL_VIEWS,
    build_dataset,
    label_map_for,
    locate,
    require_bool,
    require_rows,
    sex_words,
    view_filter,
)

LABEL_FILES: tuple[str, ...] = ("Data_Entry_2017_v2020.csv", "Data_Entry_2017.csv")
COLUMNS: tuple[str, ...] = (
    "Image Index",
    "Finding Labels",
    "Patient ID",
    "Patient Age",
    "Patient Gender",
    "View Position",
)
SPLIT_LISTS: tuple[tuple[str, str], ...] = (
    ("train", "train_val_list.txt"),
    ("test", "test_list.txt"),
)
MAP = "nih_cxr14_v1"


def find_label_file(root: Path, name: str | None) -> Path:
    """The ``Data_Entry`` CSV: ``name`` if given, else the v2020 file, else the 2017 one."""
    candidates = [name] if name is not None else list(LABEL_FILES)
    for candidate in candidates:
        if (root / candidate).is_file():
            return root / candidate
    raise DataError(f"{root} must contain {' or '.join(candidates)}. Found neither.")


def image_folders(root: Path) -> list[Path]:
    """``images_NNN/images/`` folders in name order, then a flat ``images/`` if present."""
    folders = sorted(p for p in root.glob("images_*/images") if p.is_dir())
    return folders + ([root / "images"] if (root / "images").is_dir() else [])


def _findings(frame: pd.DataFrame, path: Path) -> tuple[np.ndarray, pd.Series]:
    cells = frame["Finding Labels"].str.strip()
    raise_bad_rows(path, "Finding Labels", (cells == "").to_numpy(), cells, "non-empty")
    long = cells.str.split("|").explode()
    return long.index.to_numpy(dtype=np.int64), long.str.strip()


def official_splits(root: Path, ids: pd.Series) -> np.ndarray | None:
    """``train``/``test`` per image from the official lists, or None when they are absent."""
    present = [(split, root / name) for split, name in SPLIT_LISTS if (root / name).is_file()]
    if not present:
        return None
    split = pd.Series("", index=ids.index)
    for name, path in present:
        listed = {line.strip() for line in path.read_text(encoding="utf-8").splitlines()}
        hit = ids.isin(listed).to_numpy()
        twice = np.flatnonzero(hit & (split != "").to_numpy())
        if len(twice):
            raise DataError(
                f"{path}: image {ids.iloc[twice[0]]!r} is also in another official list. "
                "Each image must be in one official split."
            )
        split[hit] = name
    if len(present) == len(SPLIT_LISTS):
        unlisted = np.flatnonzero((split == "").to_numpy())
        if len(unlisted):
            raise DataError(
                f"{root}: {len(unlisted)} image(s) are in neither train_val_list.txt nor "
                f"test_list.txt (first {ids.iloc[unlisted[0]]!r}, data rows "
                f"{row_list(unlisted)}). Each image must be in one official split."
            )
    return split.replace("", "unlisted").to_numpy(dtype=str)


@DATASETS.register("nih_cxr14")
class NihCxr14(DatasetAdapter):
    """Adapter for NIH ChestX-ray14 (112,120 images, 30,805 patients, all frontal)."""

    card = DatasetCard(
        name="nih_cxr14",
        citation=(
            "Wang et al., ChestX-ray8: Hospital-scale Chest X-ray Database and Benchmarks, "
            "CVPR 2017."
        ),
        licence="NIH Clinical Center: unrestricted use, citation and acknowledgement requested",
        label_names=CHEXPERT_LABELS,
        task="multilabel",
        modality="chest_xray",
        access="https://nihcc.app.box.com/v/ChestXray-NIHCC (public download, no registration)",
        provided_labels=load_label_map(MAP).provided(),
    )
    defaults = {"frontal_only": True, "label_map": MAP, "label_file": None}

    def _load(self, root: Path, options: dict[str, Any]) -> Dataset:
        frontal_only = require_bool("frontal_only", options["frontal_only"])
        label_map = label_map_for(options, "nih_cxr14")
        path = find_label_file(root, options["label_file"])
        frame = read_csv(path, COLUMNS)
        ids = frame["Image Index"].str.strip()
        raise_bad_rows(path, "Image Index", (ids == "").to_numpy(), ids, "non-empty")
        raise_duplicates(path, "column 'Image Index'", ids)
        rows, names = _findings(frame, path)
        label_map.require_known(path, "Finding Labels", rows, names)
        labels = label_map.from_long(rows, names, len(frame))
        split = official_splits(root, ids)
        age = frame["Patient Age"].str.strip().str.upper().str.removesuffix("Y")
        table = pd.DataFrame(
            {
                "image_id": ids,
                "group": frame["Patient ID"].str.strip(),
                "sex": sex_words(frame["Patient Gender"]),
                "age": pd.to_numeric(age, errors="coerce"),
                "view": frame["View Position"].str.strip().str.upper(),
            }
        )
        meta = ["sex", "age", "view"]
        if split is not None:
            table["official_split"] = split
            meta.append("official_split")
        keep = view_filter(table["view"], frontal_only, FRONTAL_VIEWS)
        notes = [f"view filter (frontal_only={frontal_only}) kept {keep.sum()} of {len(table)}"]
        if split is None:
            notes.append("no train_val_list.txt / test_list.txt: no official_split column")
        table, labels = table[keep].reset_index(drop=True), labels[keep]
        require_rows(table, path, "the frontal-view filter")
        folders = image_folders(root)
        table["path"] = locate(
            table["image_id"], folders, folders[0] if folders else root / "images"
        )
        if options["check_files"]:
            require_files(table["path"].to_numpy(dtype=str), path, root)
        lists = [root / name for _, name in SPLIT_LISTS if (root / name).is_file()]
        return build_dataset(
            "nih_cxr14", root, table, labels, label_map.provided(), meta, [path, *lists], options,
            self.card, notes + [f"labels harmonised by {label_map.file}"],
        )  # fmt: skip
