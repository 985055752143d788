"""What the grid left out and which rows a shift scored, in words, from the store alone.

Cells of the config's ``exclude_cells`` are never run, so they are absent from the store; the
config stored in the ``meta`` table names them, and the report lists them as *excluded by
config* (not as missing). A shift record's ``details["shift_rows"]`` says which rows of its
target were scored (``official_test`` or ``all_frontal``) and how many images and patients.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pandas as pd

from crsbench.protocol import FROZEN

#: Dataset names as written in sentences.
DATASET_NAMES = {"isic2019": "ISIC 2019", "aptos2019": "APTOS 2019", "chexpert": "CheXpert",
                 "mimic_cxr": "MIMIC-CXR"}  # fmt: skip
#: The ``rows`` choice of a shift, in words.
ROWS_WORDING = {
    "official_test": "the official test split",
    "all_frontal": "all frontal images (every official split)",
}


def excluded_cells(meta: Mapping[str, Any]) -> list[str]:
    """``encoder×dataset`` of each cell the store's config excludes (empty when none or when
    the ``meta`` row holds no config)."""
    text = meta.get("config_json")
    if not text:
        return []
    try:
        config = json.loads(text)
    except (TypeError, ValueError):
        return []
    return [f"{c['encoder']}×{c['dataset']}" for c in config.get("exclude_cells") or ()]


def _shift_details(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per frozen shift record: target, rows, n_images, n_patients (None: unrecorded)."""
    shift = runs[(runs["condition"] == "shift") & (runs["regime"] == FROZEN)]
    out = []
    for target, text in zip(shift["eval_dataset"], shift.get("details", pd.Series()), strict=False):
        try:
            rows = json.loads(text).get("shift_rows") if isinstance(text, str) else None
        except ValueError:
            rows = None
        out.append({"target": target, **(rows or {"rows": None})})
    return pd.DataFrame(out, columns=["target", "rows", "n_images", "n_patients"])


def shift_rows_sentences(runs: pd.DataFrame) -> list[str]:
    """One sentence per shift target, e.g. ``MIMIC-CXR shift evaluated on the official test
    split (1,234 images, 456 patients).`` (a range where encoders scored different counts,
    e.g. after a quarantined image)."""
    if "details" not in runs:
        return []
    table = _shift_details(runs)
    sentences = []
    for target, rows in table.groupby("target", sort=True):
        name = DATASET_NAMES.get(str(target), str(target))
        choices = sorted(rows["rows"].dropna().unique())
        if not choices:
            sentences.append(f"{name} shift: the store does not record which rows were scored.")
            continue
        wording = " / ".join(ROWS_WORDING.get(c, c) for c in choices)
        sentences.append(
            f"{name} shift evaluated on {wording} ({_span(rows['n_images'])} images, "
            f"{_span(rows['n_patients'])} patients)."
        )
    return sentences


def _span(values: pd.Series) -> str:
    vals = values.dropna().astype(int)
    if vals.empty:
        return "?"
    lo, hi = int(vals.min()), int(vals.max())
    return f"{lo:,}" if lo == hi else f"{lo:,}–{hi:,}"
