"""APTOS 2019 Blindness Detection (fundus, 5 ordinal diabetic-retinopathy grades).

``train.csv`` (``id_code``, ``diagnosis`` in 0-4) and ``train_images/<id_code>.png``. An
``id_code`` with surrounding whitespace or with ``.png`` already appended is normalised. The
competition's ``test.csv`` has no ``diagnosis`` column and is refused as a labelled file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .base import DATASETS, Dataset, DatasetAdapter, DatasetCard, compute_revision
from .csvio import raise_bad_rows, raise_duplicates, read_csv
from .files import require_files

GRADES: tuple[str, ...] = ("0_no_dr", "1_mild", "2_moderate", "3_severe", "4_proliferative")


def _grades(values: pd.Series) -> np.ndarray:
    """Integer grade per row, ``-1`` where the cell is not an integer in 0-4."""
    numeric = pd.to_numeric(values.str.strip(), errors="coerce").to_numpy(dtype=float)
    ok = np.isfinite(numeric) & (numeric == np.round(numeric)) & (numeric >= 0) & (numeric <= 4)
    return np.where(ok, np.nan_to_num(numeric), -1).astype(np.int64)


@DATASETS.register("aptos2019")
class Aptos2019(DatasetAdapter):
    """Adapter for the APTOS 2019 training set (3,662 images, 5 ordinal grades)."""

    card = DatasetCard(
        name="aptos2019",
        citation="Karthik, Maggie, Dane. APTOS 2019 Blindness Detection. Kaggle, 2019.",
        licence="Kaggle competition rules (non-commercial research use)",
        label_names=GRADES,
        task="multiclass",
        modality="fundus",
        ordinal=True,
    )
    defaults = {"csv": "train.csv", "image_dir": "train_images"}

    def _load(self, root: Path, options: dict[str, Any]) -> Dataset:
        csv_path = root / str(options["csv"])
        frame = read_csv(csv_path, required=["id_code", "diagnosis"])
        ids = frame["id_code"].str.strip().str.removesuffix(".png").str.strip()
        raise_bad_rows(csv_path, "id_code", (ids == "").to_numpy(), ids, "non-empty")
        raise_duplicates(csv_path, "column 'id_code' (after normalisation)", ids)
        grades = _grades(frame["diagnosis"])
        raise_bad_rows(
            csv_path,
            "diagnosis",
            grades < 0,
            frame["diagnosis"],
            "an integer grade 0, 1, 2, 3 or 4",
        )
        image_dir = root / str(options["image_dir"])
        paths = (str(image_dir) + os.sep + ids + ".png").to_numpy(dtype=str)
        if options["check_files"]:
            require_files(paths, csv_path, image_dir)
        labels = np.eye(len(GRADES))[grades]
        return Dataset(
            name="aptos2019",
            root=root,
            image_ids=ids.to_numpy(dtype=str),
            paths=paths,
            labels=labels,
            label_names=GRADES,
            groups=ids.to_numpy(dtype=str),
            task="multiclass",
            metadata=pd.DataFrame(index=pd.RangeIndex(len(ids))),
            options=options,
            revision=compute_revision("aptos2019", [csv_path], options),
            card=self.card,
        )
