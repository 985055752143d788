"""ISIC 2019 (dermoscopy, 8 classes) in its official training layout.

``ISIC_2019_Training_GroundTruth.csv`` (image, MEL, NV, BCC, AK, BKL, DF, VASC, SCC, UNK; one
1.0 per row), images ``ISIC_2019_Training_Input/<image>.jpg`` (the archive's doubly nested
folder is accepted), optional ``ISIC_2019_Training_Metadata.csv`` (image, age_approx,
anatom_site_general, lesion_id, sex). ``UNK`` has no training images: it is dropped, and a row
labelled ``UNK`` is an error. Names with and without the ``_downsampled`` suffix resolve to
whichever file exists.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from crsbench.core.errors import DataError

from .base import DATASETS, Dataset, DatasetAdapter, DatasetCard, compute_revision
from .csvio import parse_cells, raise_bad_rows, raise_duplicates, read_csv, row_list
from .files import listed_files, require_files

GROUND_TRUTH = "ISIC_2019_Training_GroundTruth.csv"
METADATA = "ISIC_2019_Training_Metadata.csv"
IMAGE_DIR = "ISIC_2019_Training_Input"
CLASSES: tuple[str, ...] = ("MEL", "NV", "BCC", "AK", "BKL", "DF", "VASC", "SCC")
SUFFIX = "_downsampled"
#: ``X`` and ``X_downsampled`` name one image: two rows for it are a duplicate.
ALIAS_RULE = "image (one image: a name and the same name + '_downsampled')"
ONE_HOT_CELLS = {"1.0": 1.0, "1": 1.0, "0.0": 0.0, "0": 0.0}


def _image_dir(root: Path) -> Path:
    nested = root / IMAGE_DIR / IMAGE_DIR
    return nested if nested.is_dir() else root / IMAGE_DIR


def _resolve_paths(ids: pd.Series, image_dir: Path) -> np.ndarray:
    """``<image>.jpg``, or the name with/without ``_downsampled`` when only that exists."""
    found = listed_files(np.array([str(image_dir)]))
    base = str(image_dir) + os.sep
    exact = base + ids + ".jpg"
    stripped = base + ids.str.removesuffix(SUFFIX) + ".jpg"
    suffixed = base + ids + SUFFIX + ".jpg"
    paths = exact.where(exact.isin(found), stripped.where(stripped.isin(found), suffixed))
    paths = paths.where(paths.isin(found), exact)
    return paths.to_numpy(dtype=str)


def _read_metadata(path: Path, ids: pd.Series) -> tuple[pd.DataFrame, int]:
    """Metadata rows aligned with ``ids`` (blank where absent) and the unmatched count."""
    meta = read_csv(path, required=["image"])
    raise_duplicates(path, "column 'image'", meta["image"].str.strip())
    meta = meta.assign(image=meta["image"].str.strip())
    meta = meta.set_index(meta["image"].str.removesuffix(SUFFIX))
    keys = ids.str.removesuffix(SUFFIX)
    raise_duplicates(path, ALIAS_RULE, meta.index.to_series())
    aligned = meta.reindex(keys.to_numpy())
    matched = keys.isin(meta.index).to_numpy()
    out = pd.DataFrame(index=pd.RangeIndex(len(ids)))
    for src, dst in (("sex", "sex"), ("anatom_site_general", "site"), ("lesion_id", "lesion_id")):
        if src in aligned.columns:
            out[dst] = aligned[src].fillna("").str.strip().to_numpy()
    if "age_approx" in aligned.columns:
        age = pd.to_numeric(aligned["age_approx"].fillna("").str.strip(), errors="coerce")
        out["age"] = age.to_numpy(dtype=float)
    return out, int((~matched).sum())


@DATASETS.register("isic2019")
class Isic2019(DatasetAdapter):
    """Adapter for the ISIC 2019 training set (25,331 images, 8 classes)."""

    card = DatasetCard(
        name="isic2019",
        citation=(
            "Tschandl et al., Sci. Data 2018 (HAM10000); Codella et al., ISBI 2018; "
            "Combalia et al., arXiv:1908.02288 (BCN20000). ISIC 2019 Challenge."
        ),
        licence="CC BY-NC 4.0",
        label_names=CLASSES,
        task="multiclass",
        modality="dermoscopy",
    )
    defaults = {"use_metadata": True}

    def _load(self, root: Path, options: dict[str, Any]) -> Dataset:
        gt_path = root / GROUND_TRUTH
        frame = read_csv(gt_path, required=["image", *CLASSES, "UNK"])
        ids = frame["image"].str.strip()
        raise_bad_rows(gt_path, "image", (ids == "").to_numpy(), ids, "non-empty")
        raise_duplicates(gt_path, "column 'image'", ids)
        raise_duplicates(gt_path, ALIAS_RULE, ids.str.removesuffix(SUFFIX))
        cells = parse_cells(frame, [*CLASSES, "UNK"], ONE_HOT_CELLS, gt_path)
        unk = cells[:, -1] == 1.0
        raise_bad_rows(gt_path, "UNK", unk, frame["UNK"], "0 (UNK has no images)")
        hot = cells.sum(axis=1)
        bad = np.flatnonzero(hot != 1.0)
        if len(bad):
            first = int(bad[0])
            raise DataError(
                f"{gt_path}: each row must have exactly one 1 among {', '.join(CLASSES)}. Got "
                f"{int(hot[first])} at data row {first + 1} (line {first + 2}, image "
                f"{ids.iloc[first]!r}). {len(bad)} row(s) are bad in total (data rows "
                f"{row_list(bad)}; images {', '.join(ids.iloc[bad[:20]].tolist())})."
            )
        image_dir = _image_dir(root)
        paths = _resolve_paths(ids, image_dir)
        if options["check_files"]:
            require_files(paths, gt_path, image_dir)
        label_files = [gt_path]
        metadata = pd.DataFrame(index=pd.RangeIndex(len(ids)))
        notes: list[str] = []
        meta_path = root / METADATA
        if options["use_metadata"] and meta_path.is_file():
            metadata, unmatched = _read_metadata(meta_path, ids)
            label_files.append(meta_path)
            if unmatched:
                notes.append(f"{unmatched} image(s) have no row in {METADATA}")
        groups = ids.to_numpy(dtype=str)
        if "lesion_id" in metadata.columns:
            lesion = metadata["lesion_id"].to_numpy(dtype=str)
            groups = np.where(lesion != "", lesion, groups)
        return Dataset(
            name="isic2019",
            root=root,
            image_ids=ids.to_numpy(dtype=str),
            paths=paths,
            labels=cells[:, :-1],
            label_names=CLASSES,
            groups=groups,
            task="multiclass",
            metadata=metadata,
            options=options,
            revision=compute_revision("isic2019", label_files, options),
            card=self.card,
            notes=tuple(notes),
        )
