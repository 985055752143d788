"""CheXpert v1.0 (chest X-ray, 14 labels, multilabel), original or ``-small`` release.

The root holds ``CheXpert-v1.0/`` or ``CheXpert-v1.0-small/`` (or is that folder) with
``train.csv`` and ``valid.csv``. ``Path`` cells start with the release's folder name; they are
resolved against whichever folder is on disk, with Windows separators accepted. Label cells
are 1.0 / 0.0 / -1.0 / blank: blank (not mentioned) is 0, -1 follows the uncertainty policy.
Official train and valid are loaded together, marked in ``metadata["official_split"]``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from crsbench.core.errors import DataError

from .base import DATASETS, Dataset, DatasetAdapter, DatasetCard, check_choice, compute_revision
from .csvio import (
    TRISTATE_CELLS,
    UNCERTAINTY_POLICIES,
    apply_uncertainty,
    parse_cells,
    raise_bad_rows,
    read_csv,
)
from .files import require_files

#: The ``Frontal/Lateral`` value (and ``metadata["view"]``) of a frontal image.
FRONTAL_VIEW = "Frontal"
CHEXPERT_LABELS: tuple[str, ...] = (
    "No Finding",
    "Enlarged Cardiomediastinum",
    "Cardiomegaly",
    "Lung Opacity",
    "Lung Lesion",
    "Edema",
    "Consolidation",
    "Pneumonia",
    "Atelectasis",
    "Pneumothorax",
    "Pleural Effusion",
    "Pleural Other",
    "Fracture",
    "Support Devices",
)
FOLDERS: tuple[str, ...] = ("CheXpert-v1.0", "CheXpert-v1.0-small")
META_COLUMNS: tuple[str, ...] = ("Path", "Sex", "Age", "Frontal/Lateral", "AP/PA")
SPLIT_FILES: tuple[tuple[str, str], ...] = (("train", "train.csv"), ("valid", "valid.csv"))
PREFIX_PATTERN = r"^(?:\./)?/?(?:CheXpert-v1\.0(?:-small)?/)?"


def find_base(root: Path, folder: str | None) -> Path:
    """The CheXpert folder (holding ``train.csv``) under or at ``root``."""
    if folder is not None:
        base = root / check_choice("folder", folder, FOLDERS)
        if not base.is_dir():
            raise DataError(f"CheXpert folder {str(base)!r} must exist. It is missing.")
        return base
    if (root / "train.csv").is_file() and not any((root / f).is_dir() for f in FOLDERS):
        return root
    present = [root / f for f in FOLDERS if (root / f).is_dir()]
    if len(present) == 1:
        return present[0]
    if len(present) == 2:
        raise DataError(
            f"{root} holds both {FOLDERS[0]} and {FOLDERS[1]}. Pass folder=... to choose one."
        )
    deeper = sorted(str(p.parent) for f in FOLDERS for p in root.glob(f"*/{f}") if p.is_dir())
    hint = f" Did you mean root={deeper[0]!r}?" if deeper else ""
    raise DataError(
        f"{root} must contain {FOLDERS[0]}/ or {FOLDERS[1]}/ (or be that folder, holding "
        f"train.csv and valid.csv). Found neither.{hint}"
    )


def relative_paths(cells: pd.Series) -> pd.Series:
    """``Path`` cells without the release folder prefix, with ``/`` separators."""
    return (
        cells.str.strip()
        .str.replace("\\", "/", regex=False)
        .str.replace(PREFIX_PATTERN, "", regex=True)
    )


def _read_split(
    base: Path, split: str, filename: str, options: dict[str, Any]
) -> tuple[pd.DataFrame, int]:
    path = base / filename
    frame = read_csv(path, required=[*META_COLUMNS, *CHEXPERT_LABELS])
    raw = parse_cells(frame, CHEXPERT_LABELS, TRISTATE_CELLS, path)
    rel = relative_paths(frame["Path"])
    raise_bad_rows(path, "Path", (rel == "").to_numpy(), frame["Path"], "non-empty")
    view = frame["Frontal/Lateral"].str.strip()
    raise_bad_rows(
        path,
        "Frontal/Lateral",
        ~view.isin([FRONTAL_VIEW, "Lateral"]).to_numpy(),
        frame["Frontal/Lateral"],
        "'Frontal' or 'Lateral'",
    )
    patient = rel.str.extract(r"(patient\d+)", expand=False)
    raise_bad_rows(
        path,
        "Path",
        patient.isna().to_numpy(),
        frame["Path"],
        "a path containing a patient folder (patientNNNNN)",
    )
    out = pd.DataFrame(
        {
            "image_id": rel,
            "patient": patient,
            "sex": frame["Sex"].str.strip(),
            "age": pd.to_numeric(frame["Age"].str.strip(), errors="coerce"),
            "view": view,
            "ap_pa": frame["AP/PA"].str.strip(),
            "official_split": split,
            "_file": str(path),
            "_row": np.arange(len(frame)),
        }
    )
    labels = apply_uncertainty(raw, options["uncertainty"])
    out[list(CHEXPERT_LABELS)] = labels
    n_read = len(out)
    if options["frontal_only"]:
        out = out[out["view"] == FRONTAL_VIEW]
    return out, n_read


@DATASETS.register("chexpert")
class CheXpert(DatasetAdapter):
    """Adapter for CheXpert v1.0 train + valid (frontal: 191,027 + 202 = 191,229 images)."""

    card = DatasetCard(
        name="chexpert",
        citation="Irvin et al., CheXpert, AAAI 2019.",
        licence="Stanford University School of Medicine CheXpert Dataset Research Use Agreement",
        label_names=CHEXPERT_LABELS,
        task="multilabel",
        modality="chest_xray",
    )
    defaults = {"uncertainty": "ignore", "frontal_only": True, "folder": None}

    def _load(self, root: Path, options: dict[str, Any]) -> Dataset:
        check_choice("uncertainty", options["uncertainty"], UNCERTAINTY_POLICIES)
        if not isinstance(options["frontal_only"], bool):
            raise DataError(
                f"frontal_only must be a bool. Got {options['frontal_only']!r} instead."
            )
        base = find_base(root, options["folder"])
        parts = [_read_split(base, split, name, options) for split, name in SPLIT_FILES]
        frame = pd.concat([part for part, _ in parts], ignore_index=True)
        if len(frame) == 0:
            raise DataError(f"{base}: no images left after the frontal-view filter.")
        ids = frame["image_id"]
        dup = np.flatnonzero(ids.duplicated(keep=False).to_numpy())
        if len(dup):
            where = [f"{frame['_file'].iloc[i]} data row {frame['_row'].iloc[i] + 1}" for i in dup]
            raise DataError(
                f"column 'Path' must be unique across train.csv and valid.csv. Got "
                f"{ids.iloc[dup[0]]!r} more than once; {len(dup)} rows share a repeated path "
                f"({'; '.join(where[:20])})."
            )
        paths = (str(base) + os.sep + ids.str.replace("/", os.sep, regex=False)).to_numpy(str)
        if options["check_files"]:
            require_files(paths, base / "train.csv + valid.csv", base)
        counts = ", ".join(
            f"{split} {len(part)} of {n}"
            for (split, _), (part, n) in zip(SPLIT_FILES, parts, strict=True)
        )
        notes = (f"view filter (frontal_only={options['frontal_only']}) kept {counts} rows",)
        metadata = frame[["sex", "age", "view", "ap_pa", "official_split"]].reset_index(drop=True)
        return Dataset(
            name="chexpert",
            root=root,
            image_ids=ids.to_numpy(dtype=str),
            paths=paths,
            labels=frame[list(CHEXPERT_LABELS)].to_numpy(dtype=np.float64),
            label_names=CHEXPERT_LABELS,
            groups=frame["patient"].to_numpy(dtype=str),
            task="multilabel",
            metadata=metadata,
            options=options,
            revision=compute_revision("chexpert", [base / n for _, n in SPLIT_FILES], options),
            card=self.card,
            notes=notes,
        )
