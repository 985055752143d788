"""Sex, age and view of VinDr-CXR images from their DICOM headers (optional, one read per file)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd

from crsbench.core.errors import DataError

from .dicom import DicomError, _read
from .shift_common import FRONTAL_VIEWS, SEX_WORDS

TAGS = ("PatientSex", "PatientAge", "ViewPosition")
#: The view of every VinDr-CXR image by the release's description (postero-anterior).
RELEASE_VIEW = "PA"


def _header(path: str) -> tuple[str, str, str]:
    try:
        ds = _read(path, stop_before_pixels=True, specific_tags=list(TAGS))
    except DicomError as exc:
        raise DataError(f"DICOM header of {path} cannot be read: {exc.message}") from exc
    return tuple(str(ds.get(tag, "") or "").strip() for tag in TAGS)  # type: ignore[return-value]


def _age_years(cells: pd.Series) -> pd.Series:
    """DICOM age strings (``045Y``, ``006M``, ``010D``, ``003W``) in years; NaN otherwise."""
    parts = cells.str.extract(r"^(\d+)\s*([YMWD]?)$")
    number = pd.to_numeric(parts[0], errors="coerce")
    unit = parts[1].fillna("").replace("", "Y").map({"Y": 1.0, "M": 12.0, "W": 52.18, "D": 365.25})
    return number / unit


def read_headers(
    table: pd.DataFrame, labels: np.ndarray, headers: bool, frontal_only: bool, workers: int = 8
) -> tuple[pd.DataFrame, np.ndarray, str]:
    """Add ``sex``, ``age``, ``view``; with ``headers`` read them and filter the views.

    Returns the (filtered) table and labels, and a note saying what was done.
    """
    table = table.copy()
    if not headers:
        table["sex"], table["age"], table["view"] = "", np.nan, RELEASE_VIEW
        note = (
            "DICOM headers not read (dicom_headers=false): sex and age blank, view PA from the "
            "release description (every image postero-anterior), no view filter"
        )
        return table, labels, note
    with ThreadPoolExecutor(max_workers=workers) as pool:
        found = list(pool.map(_header, table["path"].tolist(), chunksize=64))
    sex, age, view = (pd.Series([f[i] for f in found], dtype=str) for i in range(3))
    table["sex"] = sex.str.upper().map(SEX_WORDS).fillna("").to_numpy(dtype=str)
    table["age"] = _age_years(age).to_numpy()
    table["view"] = view.str.upper().replace("", RELEASE_VIEW).to_numpy(dtype=str)
    keep = (view == "") | view.str.upper().isin(list(FRONTAL_VIEWS))
    keep = keep.to_numpy() | (not frontal_only)
    note = (
        f"view filter from DICOM ViewPosition (frontal_only={frontal_only}) kept "
        f"{int(keep.sum())} of {len(keep)} (a blank ViewPosition is kept as PA, the release's "
        "description)"
    )
    return table[keep].reset_index(drop=True), labels[keep], note
