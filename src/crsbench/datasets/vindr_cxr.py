"""VinDr-CXR (chest X-ray, DICOM), a shift target harmonised to CheXpert's 14.

Two layouts (``layout="auto"`` picks the one on disk):

* ``official`` (PhysioNet 1.0.0): ``annotations/image_labels_train.csv`` (``image_id,
  rad_id`` and one 0/1 column per finding, a row per image and radiologist),
  ``annotations/image_labels_test.csv`` (``image_id`` and the finding columns, the
  radiologists' consensus), images ``train/<image_id>.dicom`` and ``test/<image_id>.dicom``;
  ``official_split`` train / test.
* ``kaggle`` (VinBigData competition): ``train.csv`` (``image_id, class_name, class_id,
  rad_id, x_min, y_min, x_max, y_max``; a row per box, or a ``No finding`` row, per
  radiologist) and ``train/<image_id>.dicom``; ``official_split`` train (the competition's
  test images have no labels). It has no Edema, Pneumonia or fracture class.

Image-level rule over the radiologists of a training image (``radiologists``): ``majority``
(default: marked by more than half of them) or ``any``. The release has no patient id, so
groups are image ids. Sex, age and view come from the DICOM headers only with
``dicom_headers=True`` (one header read per file); the release describes every image as a
postero-anterior view, so without headers the view is ``PA`` and no view filter is applied
(stated in the notes).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from crsbench.core.errors import DataError

from .base import DATASETS, Dataset, DatasetAdapter, DatasetCard, check_choice
from .chexpert import CHEXPERT_LABELS
from .csvio import TRISTATE_CELLS, parse_cells, raise_bad_rows, raise_duplicates, read_csv
from .files import require_files
from .labelmap import LabelMap, load_label_map
from .shift_common import build_dataset, label_map_for, require_bool, require_rows
from .vindr_headers import read_headers

LAYOUTS: tuple[str, ...] = ("auto", "official", "kaggle")
RULES: tuple[str, ...] = ("majority", "any")
OFFICIAL = ("annotations/image_labels_train.csv", "annotations/image_labels_test.csv")
KAGGLE = "train.csv"
KAGGLE_COLUMNS = (
    "image_id",
    "class_name",
    "class_id",
    "rad_id",
    "x_min",
    "y_min",
    "x_max",
    "y_max",
)
KAGGLE_CLASSES: tuple[str, ...] = (
    "Aortic enlargement", "Atelectasis", "Calcification", "Cardiomegaly", "Consolidation", "ILD",
    "Infiltration", "Lung Opacity", "Nodule/Mass", "Other lesion", "Pleural effusion",
    "Pleural thickening", "Pneumothorax", "Pulmonary fibrosis", "No finding",
)  # fmt: skip
BINARY_CELLS = {**{k: v for k, v in TRISTATE_CELLS.items() if v in (0.0, 1.0)}, "": 0.0}
MAP = "vindr_cxr_v1"


def choose_layout(root: Path, layout: str) -> str:
    """The layout to read: ``layout`` itself, or for ``auto`` the only one present."""
    check_choice("layout", layout, LAYOUTS)
    official = (root / OFFICIAL[0]).is_file()
    kaggle = (root / KAGGLE).is_file()
    if layout != "auto":
        return layout
    if official and kaggle:
        raise DataError(f"{root} holds both VinDr layouts. Pass layout='official' or 'kaggle'.")
    if official or kaggle:
        return "official" if official else "kaggle"
    raise DataError(
        f"{root} must contain {OFFICIAL[0]} (official release) or {KAGGLE} (Kaggle). Found neither."
    )


def _vote(counts: pd.DataFrame, raters: pd.Series, rule: str) -> pd.DataFrame:
    """Per image and finding: present by ``rule`` given counts of marking radiologists."""
    if rule == "any":
        return counts > 0
    return counts.mul(2).gt(raters, axis=0)


def _official_part(path: Path, label_map: LabelMap, rule: str, voted: bool) -> pd.DataFrame:
    """One official label file → frame indexed by image_id, one bool column per finding."""
    required = ["image_id", "rad_id"] if voted else ["image_id"]
    frame = read_csv(path, required)
    header = list(frame.columns)
    findings = [c for c in header if c not in required]
    label_map.require_known(path, "header", np.zeros(len(findings), dtype=int), pd.Series(findings))
    ids = frame["image_id"].str.strip()
    raise_bad_rows(path, "image_id", (ids == "").to_numpy(), ids, "non-empty")
    raise_duplicates(path, "(image_id, rad_id)" if voted else "column 'image_id'",
                     frame[required].apply(lambda c: c.str.strip()))  # fmt: skip
    values = pd.DataFrame(parse_cells(frame, findings, BINARY_CELLS, path), columns=findings)
    values["image_id"] = ids
    if not voted:
        return values.set_index("image_id") > 0
    grouped = values.groupby("image_id", sort=False)
    return _vote(grouped.sum(), grouped.size(), rule)


def _kaggle_labels(path: Path, label_map: LabelMap, rule: str) -> pd.DataFrame:
    frame = read_csv(path, KAGGLE_COLUMNS)
    names = frame["class_name"].str.strip()
    label_map.require_known(path, "class_name", np.arange(len(frame)), names)
    ids, rads = frame["image_id"].str.strip(), frame["rad_id"].str.strip()
    raise_bad_rows(path, "image_id", (ids == "").to_numpy(), ids, "non-empty")
    raise_bad_rows(path, "rad_id", (rads == "").to_numpy(), rads, "non-empty")
    marks = pd.DataFrame({"image_id": ids, "rad": rads, "finding": names}).drop_duplicates()
    raters = marks.groupby("image_id", sort=False)["rad"].nunique()
    counts = pd.crosstab(marks["image_id"], marks["finding"]).reindex(raters.index, fill_value=0)
    counts = counts.reindex(columns=sorted(set(counts.columns) | set(KAGGLE_CLASSES)), fill_value=0)
    return _vote(counts, raters, rule)


def _labels(present: pd.DataFrame, label_map: LabelMap) -> tuple[np.ndarray, tuple[str, ...]]:
    columns = {c: present[c].to_numpy(dtype=bool) for c in present.columns}
    provided = label_map.provided(list(present.columns))
    return label_map.matrix(columns, len(present)), provided


@DATASETS.register("vindr_cxr")
class VinDrCxr(DatasetAdapter):
    """Adapter for VinDr-CXR (15,000 training and 3,000 test images, Vietnam)."""

    card = DatasetCard(
        name="vindr_cxr",
        citation=(
            "Nguyen et al., VinDr-CXR: An open dataset of chest X-rays with radiologist's "
            "annotations, Scientific Data 9, 2022."
        ),
        licence="PhysioNet Credentialed Health Data License 1.5.0 (DUA-bound)",
        label_names=CHEXPERT_LABELS,
        task="multilabel",
        modality="chest_xray",
        access=(
            "https://physionet.org/content/vindr-cxr/1.0.0/ (credentialed); Kaggle "
            "vinbigdata-chest-xray-abnormalities-detection (competition rules)"
        ),
        provided_labels=load_label_map(MAP).provided(),
    )
    defaults = {
        "frontal_only": True,
        "label_map": MAP,
        "layout": "auto",
        "radiologists": "majority",
        "dicom_headers": False,
    }

    def _load(self, root: Path, options: dict[str, Any]) -> Dataset:
        frontal_only = require_bool("frontal_only", options["frontal_only"])
        headers = require_bool("dicom_headers", options["dicom_headers"])
        rule = check_choice("radiologists", options["radiologists"], RULES)
        label_map = label_map_for(options, "vindr_cxr")
        layout = choose_layout(root, options["layout"])
        if layout == "official":
            files = [root / OFFICIAL[0], root / OFFICIAL[1]]
            parts = [("train", _official_part(files[0], label_map, rule, True)),
                     ("test", _official_part(files[1], label_map, rule, False))]  # fmt: skip
        else:
            files = [root / KAGGLE]
            parts = [("train", _kaggle_labels(files[0], label_map, rule))]
        present = pd.concat([p for _, p in parts]).fillna(False).astype(bool)
        split = np.concatenate([np.full(len(p), s) for s, p in parts])
        ids = present.index.to_series().reset_index(drop=True)
        dup = ids.duplicated(keep=False).to_numpy()
        if dup.any():
            raise DataError(f"{root}: image {ids[dup].iloc[0]!r} is in both train and test labels.")
        labels, provided = _labels(present, label_map)
        table = pd.DataFrame({"image_id": ids, "group": ids, "official_split": split})
        table["path"] = str(root) + os.sep + table["official_split"] + os.sep + ids + ".dicom"
        test = " (official test: the release's consensus)" if layout == "official" else ""
        notes = [f"{layout} layout; image labels by the '{rule}' rule over radiologists{test}",
                 f"labels harmonised by {label_map.file}"]  # fmt: skip
        if options["check_files"]:
            require_files(table["path"].to_numpy(dtype=str), files[0], root)
        table, labels, note = read_headers(table, labels, headers, frontal_only)
        notes.append(note)
        require_rows(table, files[0], "the view filter")
        return build_dataset(
            "vindr_cxr", root, table, labels, provided, ["sex", "age", "view", "official_split"],
            files, options, self.card, notes,
        )  # fmt: skip
