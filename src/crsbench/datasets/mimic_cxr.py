"""MIMIC-CXR-JPG v2 (chest X-ray, the 14 CheXpert labels), the institutional-shift target.

``mimic-cxr-2.0.0-chexpert.csv`` (or ``-negbio``; subject_id, study_id, 14 labels),
``mimic-cxr-2.0.0-metadata.csv`` (dicom_id, subject_id, study_id, ViewPosition, ...),
``mimic-cxr-2.0.0-split.csv`` (dicom_id, study_id, subject_id, split), each plain or ``.gz``,
and images ``files/p<2 digits>/p<subject_id>/s<study_id>/<dicom_id>.jpg``. Each image joins
exactly one label row; duplicate label rows are an error; orphans are counted, dropped and
reported, and fail the load above ``max_orphan_fraction``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from crsbench.core.errors import ConfigError, DataError

from .base import DATASETS, Dataset, DatasetAdapter, DatasetCard, check_choice, compute_revision
from .chexpert import CHEXPERT_LABELS
from .csvio import (
    TRISTATE_CELLS,
    UNCERTAINTY_POLICIES,
    apply_uncertainty,
    parse_cells,
    raise_bad_rows,
    raise_duplicates,
    read_csv,
)
from .files import require_files

PREFIX = "mimic-cxr-2.0.0-"
LABEL_SOURCES: tuple[str, ...] = ("chexpert", "negbio")
FRONTAL_VIEWS: tuple[str, ...] = ("PA", "AP")
SPLITS = {"train": "train", "validate": "valid", "test": "test"}
KEY = ["subject_id", "study_id"]


def find_file(root: Path, stem: str) -> Path:
    """``root/<stem>.csv`` or ``root/<stem>.csv.gz``, whichever exists."""
    for suffix in (".csv", ".csv.gz"):
        path = root / f"{stem}{suffix}"
        if path.is_file():
            return path
    raise DataError(f"{root} must contain {stem}.csv or {stem}.csv.gz. Found neither.")


def _ids(frame: pd.DataFrame, columns: list[str], path: Path) -> pd.DataFrame:
    """Strip the id columns and require them to be non-empty (digits for subject/study)."""
    out = frame.copy()
    for column in columns:
        values = out[column].str.strip()
        if column in KEY:
            bad = ~values.str.fullmatch(r"\d+").to_numpy(dtype=bool)
            raise_bad_rows(path, column, bad, out[column], "a positive integer id")
        else:
            raise_bad_rows(path, column, (values == "").to_numpy(), values, "non-empty")
        out[column] = values
    return out


def _read_inputs(
    root: Path, source: str
) -> tuple[tuple[Path, Path, Path], tuple[pd.DataFrame, ...]]:
    label_path = find_file(root, PREFIX + source)
    meta_path = find_file(root, PREFIX + "metadata")
    split_path = find_file(root, PREFIX + "split")
    labels = _ids(read_csv(label_path, [*KEY, *CHEXPERT_LABELS]), KEY, label_path)
    raise_duplicates(label_path, "(subject_id, study_id)", labels[KEY])
    meta = read_csv(meta_path, ["dicom_id", *KEY, "ViewPosition"])
    meta = _ids(meta, ["dicom_id", *KEY], meta_path)
    raise_duplicates(meta_path, "column 'dicom_id'", meta["dicom_id"])
    split = _ids(read_csv(split_path, ["dicom_id", *KEY, "split"]), ["dicom_id"], split_path)
    raise_duplicates(split_path, "column 'dicom_id'", split["dicom_id"])
    names = split["split"].str.strip()
    raise_bad_rows(
        split_path, "split", ~names.isin(list(SPLITS)).to_numpy(), names,
        "one of 'train', 'validate', 'test'",
    )  # fmt: skip
    split = split.assign(official_split=names.map(SPLITS))
    return (label_path, meta_path, split_path), (labels, meta, split)


@DATASETS.register("mimic_cxr")
class MimicCxr(DatasetAdapter):
    """Adapter for MIMIC-CXR-JPG v2.0.0/2.1.0 (frontal views, 14 CheXpert labels)."""

    card = DatasetCard(
        name="mimic_cxr",
        citation="Johnson et al., MIMIC-CXR-JPG, arXiv:1901.07042; PhysioNet 2019.",
        licence="PhysioNet Credentialed Health Data License 1.5.0 (DUA-bound)",
        label_names=CHEXPERT_LABELS,
        task="multilabel",
        modality="chest_xray",
    )
    defaults = {
        "uncertainty": "ignore",
        "label_source": "chexpert",
        "frontal_only": True,
        "max_orphan_fraction": 0.05,
    }

    def _load(self, root: Path, options: dict[str, Any]) -> Dataset:
        check_choice("uncertainty", options["uncertainty"], UNCERTAINTY_POLICIES)
        source = check_choice("label_source", options["label_source"], LABEL_SOURCES)
        max_orphans = options["max_orphan_fraction"]
        if not isinstance(max_orphans, (int, float)) or not 0 <= max_orphans <= 1:
            raise ConfigError(
                f"max_orphan_fraction must be a number in [0, 1]. Got {max_orphans!r} instead."
            )
        files, (labels, meta, split) = _read_inputs(root, source)
        label_path, meta_path, split_path = files
        views = meta["ViewPosition"].str.strip()
        images = meta[views.isin(list(FRONTAL_VIEWS))] if options["frontal_only"] else meta
        notes = [f"view filter (frontal_only={options['frontal_only']}) kept "
                 f"{len(images)} of {len(meta)} images"]  # fmt: skip
        images = images.assign(view=views.loc[images.index])
        joined = images.merge(
            split[["dicom_id", "official_split", *KEY]].rename(
                columns={"subject_id": "_split_subject", "study_id": "_split_study"}
            ),
            on="dicom_id",
            how="left",
            validate="one_to_one",
        )
        no_split = joined["official_split"].isna().to_numpy()
        has_split = ~no_split
        mismatch = has_split & (
            (joined["_split_subject"].str.strip() != joined["subject_id"]).to_numpy(dtype=bool)
            | (joined["_split_study"].str.strip() != joined["study_id"]).to_numpy(dtype=bool)
        )
        if mismatch.any():
            first = joined.loc[mismatch, "dicom_id"].iloc[0]
            raise DataError(
                f"{split_path}: subject_id/study_id of dicom_id {first!r} must match "
                f"{meta_path.name}. They differ for {int(mismatch.sum())} image(s)."
            )
        label_frame = labels[KEY].assign(_label_row=np.arange(len(labels)))
        joined = joined.merge(label_frame, on=KEY, how="left", validate="many_to_one")
        no_label = joined["_label_row"].isna().to_numpy()
        studies = pd.MultiIndex.from_frame(meta[KEY])
        unused = int((~pd.MultiIndex.from_frame(labels[KEY]).isin(studies)).sum())
        orphans = no_split | no_label
        if len(joined) == 0:
            raise DataError(f"{meta_path}: no images left after the frontal-view filter.")
        fraction = orphans.sum() / len(joined)
        detail = (
            f"{int(no_label.sum())} image(s) without a row in {label_path.name}, "
            f"{int(no_split.sum())} without a row in {split_path.name}"
        )
        if fraction > max_orphans:
            raise DataError(
                f"{root}: {fraction:.1%} of the images are orphans ({detail}). Must be at most "
                f"max_orphan_fraction={max_orphans:.1%}."
            )
        notes.append(f"dropped {int(orphans.sum())} orphan image(s): {detail}")
        notes.append(f"{unused} label row(s) in {label_path.name} have no image")
        joined = joined[~orphans].reset_index(drop=True)
        rows = joined["_label_row"].to_numpy(dtype=np.int64)
        raw = parse_cells(labels, CHEXPERT_LABELS, TRISTATE_CELLS, label_path)[rows]
        subject, study, dicom = joined["subject_id"], joined["study_id"], joined["dicom_id"]
        rel = "files/p" + subject.str[:2] + "/p" + subject + "/s" + study + "/" + dicom + ".jpg"
        paths = (str(root) + os.sep + rel.str.replace("/", os.sep, regex=False)).to_numpy(str)
        if options["check_files"]:
            require_files(paths, meta_path, root / "files")
        metadata = pd.DataFrame(
            {
                "subject_id": subject.to_numpy(dtype=str),
                "study_id": study.to_numpy(dtype=str),
                "view": joined["view"].to_numpy(dtype=str),
                "official_split": joined["official_split"].to_numpy(dtype=str),
            }
        )
        return Dataset(
            name="mimic_cxr",
            root=root,
            image_ids=dicom.to_numpy(dtype=str),
            paths=paths,
            labels=apply_uncertainty(raw, options["uncertainty"]),
            label_names=CHEXPERT_LABELS,
            groups=subject.to_numpy(dtype=str),
            task="multilabel",
            metadata=metadata,
            options=options,
            revision=compute_revision("mimic_cxr", list(files), options),
            card=self.card,
            notes=tuple(notes),
        )
