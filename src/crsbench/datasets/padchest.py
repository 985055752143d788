"""PadChest (chest X-ray, 16-bit PNG), a shift target harmonised to CheXpert's 14.

``PADCHEST_chest_x_ray_images_labels_160K_01.02.19.csv`` (plain or ``.gz``; ``ImageID``,
``ImageDir``, ``StudyDate_DICOM``, ``PatientID``, ``PatientBirth``, ``PatientSex_DICOM``,
``Projection``, ``Labels`` as a list literal of finding strings, ...) and images
``ROOT/<ImageDir>/<ImageID>``. Rows without labels (blank cell or an empty list) are dropped
and counted; the release's known missing or unreadable images (listed in the label map) are
skipped by default; other missing images are skipped and counted, and fail the load above
``max_missing_fraction``. No official split: every row is one pool.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from crsbench.core.errors import ConfigError, DataError

from .base import DATASETS, Dataset, DatasetAdapter, DatasetCard
from .chexpert import CHEXPERT_LABELS
from .csvio import raise_bad_rows, raise_duplicates, read_csv, row_list
from .files import exists_mask
from .labelmap import load_label_map
from .mimic_cxr import find_file
from .shift_common import (
    build_dataset,
    drop_note,
    label_map_for,
    require_bool,
    require_rows,
    sex_words,
    view_filter,
)

STEM = "PADCHEST_chest_x_ray_images_labels_160K_01.02.19"
COLUMNS: tuple[str, ...] = (
    "ImageID",
    "ImageDir",
    "StudyDate_DICOM",
    "PatientID",
    "PatientBirth",
    "PatientSex_DICOM",
    "Projection",
    "Labels",
)
FRONTAL_PROJECTIONS: tuple[str, ...] = ("PA", "AP", "AP_horizontal")
#: ``metadata["view"]``: the projection with supine AP (``AP_horizontal``) written as AP.
VIEW_OF_PROJECTION = {"AP_horizontal": "AP"}
MAP = "padchest_v1"


def _parse_list(cell: str) -> list[str] | None:
    """A ``Labels`` cell as its list of stripped, non-empty strings; None if not a list."""
    text = cell.strip()
    if text in ("", "nan", "None"):
        return []
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        return None
    return [v.strip() for v in value if v.strip()]


def parse_labels(cells: pd.Series, path: Path) -> tuple[np.ndarray, pd.Series, np.ndarray]:
    """(row, finding) pairs of every row, and the mask of rows with no finding at all.

    Each distinct cell is parsed once (``ast.literal_eval``); a cell that is not a list
    literal of strings raises :class:`DataError` naming the row.
    """
    codes, uniques = pd.factorize(cells, sort=False)
    parsed = [_parse_list(str(u)) for u in uniques]
    bad = np.array([p is None for p in parsed], dtype=bool)[codes] if len(parsed) else codes < 0
    raise_bad_rows(path, "Labels", bad, cells, "a list literal of strings like ['normal']")
    lists = pd.Series([parsed[c] for c in codes], index=cells.index, dtype=object)
    empty = (lists.str.len() == 0).to_numpy()
    long = lists[~empty].explode()
    return long.index.to_numpy(dtype=np.int64), long.astype(str), empty


def _ages(frame: pd.DataFrame) -> pd.Series:
    """Age at the study in years: study year minus birth year (NaN when either is missing)."""
    study = pd.to_numeric(frame["StudyDate_DICOM"].str.strip().str[:4], errors="coerce")
    birth = pd.to_numeric(frame["PatientBirth"].str.strip().str[:4], errors="coerce")
    return study - birth


def _drop(table: pd.DataFrame, labels: np.ndarray, mask: np.ndarray):
    return table[~mask].reset_index(drop=True), labels[~mask]


@DATASETS.register("padchest")
class PadChest(DatasetAdapter):
    """Adapter for PadChest (160,861 images of 67,000 patients, San Juan Hospital, Spain)."""

    card = DatasetCard(
        name="padchest",
        citation=(
            "Bustos et al., PadChest: A large chest x-ray image dataset with multi-label "
            "annotated reports, Medical Image Analysis 66, 2020."
        ),
        licence="BIMCV PadChest Dataset Research Use Agreement (non-commercial research)",
        label_names=CHEXPERT_LABELS,
        task="multilabel",
        modality="chest_xray",
        access="https://bimcv.cipf.es/bimcv-projects/padchest/ (request form, then download)",
        provided_labels=load_label_map(MAP).provided(),
    )
    defaults = {
        "frontal_only": True,
        "label_map": MAP,
        "skip_known_bad": True,
        "max_missing_fraction": 0.01,
    }

    def _load(self, root: Path, options: dict[str, Any]) -> Dataset:
        frontal_only = require_bool("frontal_only", options["frontal_only"])
        skip_bad = require_bool("skip_known_bad", options["skip_known_bad"])
        max_missing = options["max_missing_fraction"]
        if (
            isinstance(max_missing, bool)
            or not isinstance(max_missing, (int, float))
            or not (0 <= max_missing <= 1)
        ):
            raise ConfigError(
                f"max_missing_fraction must be a number in [0, 1]. Got {max_missing!r} instead."
            )
        label_map = label_map_for(options, "padchest")
        path = find_file(root, STEM)
        frame = read_csv(path, COLUMNS)
        ids = frame["ImageID"].str.strip()
        folder = frame["ImageDir"].str.strip()
        raise_bad_rows(path, "ImageID", (ids == "").to_numpy(), ids, "non-empty")
        raise_bad_rows(path, "ImageDir", (folder == "").to_numpy(), folder, "non-empty")
        raise_duplicates(path, "column 'ImageID'", ids)
        rows, names, unlabelled = parse_labels(frame["Labels"], path)
        label_map.require_known(path, "Labels", rows, names)
        labels = label_map.from_long(rows, names, len(frame))
        table = pd.DataFrame(
            {
                "image_id": ids,
                "group": frame["PatientID"].str.strip(),
                "sex": sex_words(frame["PatientSex_DICOM"]),
                "age": _ages(frame),
                "view": frame["Projection"].str.strip().replace(VIEW_OF_PROJECTION),
                "projection": frame["Projection"].str.strip(),
                "path": str(root) + os.sep + folder + os.sep + ids,
                "_row": np.arange(len(frame)),
            }
        )
        notes = [
            drop_note("without labels (blank or empty Labels)", np.flatnonzero(unlabelled), ids)
        ]
        table, labels = _drop(table, labels, unlabelled)
        keep = view_filter(table["projection"], frontal_only, FRONTAL_PROJECTIONS)
        notes.append(f"view filter (frontal_only={frontal_only}) kept {keep.sum()} of {len(keep)}")
        table, labels = _drop(table, labels, ~keep)
        if skip_bad:
            bad = table["image_id"].isin(label_map.extra.get("known_bad_images", [])).to_numpy()
            notes.append(drop_note(f"known missing/unreadable in the release ({label_map.file})",
                                   np.flatnonzero(bad), table["image_id"]))  # fmt: skip
            table, labels = _drop(table, labels, bad)
        require_rows(table, path, "the label, view and known-bad filters")
        if options["check_files"]:
            missing = ~exists_mask(table["path"].to_numpy(dtype=str))
            self._check_missing(missing, table, path, max_missing)
            notes.append(
                drop_note("whose image is missing", np.flatnonzero(missing), table["image_id"])
            )
            table, labels = _drop(table, labels, missing)
            require_rows(table, path, "dropping missing images")
        return build_dataset(
            "padchest", root, table, labels, label_map.provided(),
            ["sex", "age", "view", "projection"],
            [path], options, self.card, notes + [f"labels harmonised by {label_map.file}"],
        )  # fmt: skip

    @staticmethod
    def _check_missing(
        missing: np.ndarray, table: pd.DataFrame, path: Path, max_missing: float
    ) -> None:
        if not missing.any() or missing.mean() <= max_missing:
            return
        rows = table["_row"].to_numpy()[missing]
        first = table["path"].to_numpy(dtype=str)[missing][0]
        raise DataError(
            f"{path}: {len(rows)} of {len(missing)} images are missing ({missing.mean():.1%}), "
            f"first {first} (column 'ImageID', data rows {row_list(rows)}). "
            f"Must be at most max_missing_fraction={max_missing:.1%}; check the download."
        )
