"""The rows a shift target is evaluated on (the config's ``shifts[].rows``).

``official_test`` (the default) keeps the frontal images of the dataset's official test split
(MIMIC-CXR: ``mimic-cxr-2.0.0-split.csv`` ``split == "test"``); ``all_frontal`` keeps every
frontal image whatever its official split. Nothing is ever trained on a shift target, so the
choice only decides which images the transferred probes are scored on.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from crsbench.core.errors import ConfigError, DataError
from crsbench.protocol import SHIFT_ROWS

from .chexpert import FRONTAL_VIEW
from .mimic_cxr import FRONTAL_VIEWS, SPLITS

#: ``metadata["view"]`` values of a frontal image (MIMIC-CXR ``ViewPosition``, CheXpert).
FRONTAL_VIEW_VALUES: tuple[str, ...] = (*FRONTAL_VIEWS, FRONTAL_VIEW)
#: ``metadata["official_split"]`` value of the official test split.
OFFICIAL_TEST = SPLITS["test"]


def frontal_mask(data: Any) -> np.ndarray:
    """Rows with a frontal view; every row when the dataset has no ``view`` column."""
    meta = data.metadata
    if "view" not in meta.columns:
        return np.ones(len(data.image_ids), dtype=bool)
    return meta["view"].astype(str).isin(list(FRONTAL_VIEW_VALUES)).to_numpy()


def shift_eval_rows(data: Any, rows: str) -> np.ndarray:
    """Sorted row indices of ``data`` that a shift onto it evaluates.

    Parameters
    ----------
    data : crsbench.datasets.Dataset
        The loaded shift target.
    rows : {"official_test", "all_frontal"}
        The shift's ``rows`` key.

    Raises
    ------
    DataError
        ``official_test`` on a dataset without an ``official_split`` column or without test
        rows, or a choice that selects no image.
    """
    if rows not in SHIFT_ROWS:
        raise ConfigError(f"shifts rows must be one of {list(SHIFT_ROWS)}. Got {rows!r} instead.")
    keep = frontal_mask(data)
    if rows == "official_test":
        meta = data.metadata
        if "official_split" not in meta.columns:
            raise DataError(
                f"shift target {data.name!r} has no official split (metadata column "
                "'official_split'), so rows: official_test cannot be evaluated; set "
                "rows: all_frontal on its shift."
            )
        keep = keep & (meta["official_split"].astype(str) == OFFICIAL_TEST).to_numpy()
    if not keep.any():
        raise DataError(
            f"shift target {data.name!r}: rows: {rows} selects no image (frontal images: "
            f"{int(frontal_mask(data).sum())} of {len(data.image_ids)}). Check its split file, "
            "or set rows: all_frontal on its shift."
        )
    return np.flatnonzero(keep)


def rows_provenance(data: Any, rows: str, evaluated: np.ndarray) -> dict[str, Any]:
    """What a shift record says about its evaluation rows: the choice, images and patients.

    ``evaluated`` are the row indices actually scored (the selection less any quarantined
    image); patients are counted by ``data.groups``.
    """
    evaluated = np.asarray(evaluated, dtype=np.int64)
    return {
        "rows": rows,
        "n_images": int(len(evaluated)),
        "n_patients": int(len(np.unique(np.asarray(data.groups)[evaluated]))),
    }
