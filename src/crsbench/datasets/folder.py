"""Bring your own dataset: one CSV of image paths and labels.

The CSV (option ``csv``, default ``labels.csv`` under the root, or an absolute path) has an
image path column (``path_column``, relative to the CSV's folder, or to ``image_dir`` under
the root, or absolute) and label
columns (``label_columns``; default: every other column). One label column of integer or
string classes gives a multiclass task; several 0/1 columns give a multilabel task (blank
cells are an error, or masked as NaN with ``missing="mask"``). ``group_column`` (patient id)
and ``id_column`` are optional.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from crsbench.core.errors import ConfigError, DataError
from crsbench.core.types import Task

from .base import (
    DATASETS,
    MODALITIES,
    Dataset,
    DatasetAdapter,
    DatasetCard,
    check_choice,
    compute_revision,
)
from .csvio import parse_cells, raise_bad_rows, raise_duplicates, read_csv, read_header
from .files import require_files

BINARY_CELLS = {"1": 1.0, "1.0": 1.0, "0": 0.0, "0.0": 0.0, "": -2.0}
#: Cells that mean "no value" to pandas, R and spreadsheets (compared lower-case): never a class
#: or a patient id.
MISSING_MARKERS = frozenset({"na", "n/a", "nan", "-nan", "null", "<na>", "#n/a", "#na"})


def _missing(values: pd.Series) -> np.ndarray:
    """Blank cells and missing-value markers (:data:`MISSING_MARKERS`)."""
    return ((values == "") | values.str.lower().isin(MISSING_MARKERS)).to_numpy()


def _columns(value: Any, option: str) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        names = [v.strip() for v in value.split(",") if v.strip()]
    elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        names = [v.strip() for v in value]
    else:
        raise ConfigError(f"{option} must be a list of column names. Got {value!r} instead.")
    if not names:
        raise ConfigError(f"{option} must name at least one column. Got {value!r} instead.")
    return names


#: Integer classes beyond this are not held exactly by a float64 and could merge.
LARGEST_CLASS = 2**53


def _check_numbers(values: pd.Series, csv_path: Path, column: str) -> pd.Series | None:
    """The column's numbers when it holds numbers (None for class names); a column mixing
    numbers and text, or holding a number that is not a finite integer within
    below :data:`LARGEST_CLASS` in magnitude (inf, 1e400, 1.5, 1e20), is refused naming the row."""
    numeric = pd.to_numeric(values, errors="coerce")
    if numeric.isna().all():
        return None
    hint = " (a column of numbers names classes 0, 1, 2, ...; or name every class in words)"
    raise_bad_rows(csv_path, column, numeric.isna().to_numpy(), values,
                   "a number like its other rows" + hint)  # fmt: skip
    array = numeric.to_numpy(dtype=float)
    raise_bad_rows(csv_path, column, ~np.isfinite(array), values, "a finite number" + hint)
    bad = np.zeros(len(array), dtype=bool)  # an int64 column holds its integers exactly
    if not pd.api.types.is_integer_dtype(numeric):
        bad = (array != np.round(array)) | (np.abs(array) >= LARGEST_CLASS)
    raise_bad_rows(csv_path, column, bad, values,
                   f"an integer class below 2**53 in magnitude (held exactly){hint}")  # fmt: skip
    return numeric


def _classes(values: pd.Series, csv_path: Path, column: str) -> tuple[np.ndarray, tuple[str, ...]]:
    """Class index per row and class names (integers sorted numerically, else as strings)."""
    numeric = _check_numbers(values, csv_path, column)
    if numeric is not None:
        keys = numeric.astype(np.int64)
        names = tuple(str(v) for v in sorted(keys.unique()))
        codes = pd.Categorical(keys, categories=sorted(keys.unique())).codes
    else:
        categories = sorted(values.unique())
        names = tuple(categories)
        codes = pd.Categorical(values, categories=categories).codes
    return np.asarray(codes, dtype=np.int64), names


def _check_option_types(options: dict[str, Any]) -> None:
    """Column names are strings (the path column's may not be None); files are paths."""
    for key in ("path_column", "group_column", "id_column", "csv", "image_dir"):
        value = options[key]
        if value is None and key not in ("path_column", "csv"):
            continue
        if not isinstance(value, (str, os.PathLike)) or not str(value).strip():
            what = "a file or folder name" if key in ("csv", "image_dir") else "a column name"
            raise ConfigError(f"{key} must be {what} (text). Got {value!r} instead.")


@DATASETS.register("folder")
class Folder(DatasetAdapter):
    """Adapter for a user's own CSV + image files."""

    card = DatasetCard(
        name="folder",
        citation="(user-provided dataset)",
        licence="(user-provided)",
        label_names=(),
        task="multiclass",
        modality="other",
    )
    defaults = {
        "csv": "labels.csv",
        "path_column": "path",
        "label_columns": None,
        "group_column": None,
        "id_column": None,
        # Folder the path column is relative to (itself relative to the root); None: the
        # CSV's folder.
        "image_dir": None,
        # Allowed classes of a single label column, comma-separated, in the order wanted;
        # None: every value found. A value outside the list is an error naming its row.
        "classes": None,
        "missing": "error",
        "modality": "other",
        # Image paths that leave the root ('..', absolute, symlinks out) are refused unless
        # this is true: for a CSV that points at images you keep elsewhere and trust.
        "allow_outside_root": False,
    }

    def _load(self, root: Path, options: dict[str, Any]) -> Dataset:
        _check_option_types(options)
        check_choice("missing", options["missing"], ("error", "mask"))
        if not isinstance(options["allow_outside_root"], bool):
            raise ConfigError(
                "allow_outside_root must be true or false. "
                f"Got {options['allow_outside_root']!r} instead."
            )
        check_choice("modality", options["modality"], MODALITIES)
        csv_path = Path(str(options["csv"])).expanduser()
        csv_path = csv_path if csv_path.is_absolute() else root / csv_path
        path_col = str(options["path_column"])
        extra = [c for c in (options["group_column"], options["id_column"]) if c is not None]
        label_cols = _columns(options["label_columns"], "label_columns")
        if label_cols is None:
            header = read_header(csv_path) if csv_path.is_file() else []
            label_cols = [c for c in header if c not in {path_col, *extra} and c]
        if not label_cols:
            raise DataError(
                f"{csv_path}: has no label columns (only {path_col!r}"
                f"{''.join(', ' + repr(c) for c in extra)}). A labelled dataset must have at "
                f"least one label column besides the path column."
            )
        frame = read_csv(csv_path, required=[path_col, *extra, *label_cols])
        cells = frame[path_col].str.strip()
        raise_bad_rows(csv_path, path_col, (cells == "").to_numpy(), cells, "non-empty")
        image_dir = csv_path.parent
        if options["image_dir"] is not None:
            image_dir = root / Path(str(options["image_dir"])).expanduser()
        base = str(image_dir) + os.sep
        absolute = cells.map(os.path.isabs) if os.sep != "/" else cells.str.startswith("/")
        paths = cells.where(absolute, base + cells).to_numpy(dtype=str)
        ids = frame[options["id_column"]].str.strip() if options["id_column"] else cells
        raise_duplicates(csv_path, f"column {options['id_column'] or path_col!r}", ids)
        task: Task
        if len(label_cols) == 1:
            task = "multiclass"
            column = label_cols[0]
            values = frame[column].str.strip()
            raise_bad_rows(csv_path, column, _missing(values), values,
                           "a class (integer or name), not blank or a missing-value marker "
                           "(NA, nan, ...); give the row its class or delete it")  # fmt: skip
            allowed = _columns(options["classes"], "classes")
            if allowed is not None:
                outside = ~values.isin(allowed).to_numpy()
                raise_bad_rows(csv_path, column, outside, values,
                               f"one of the allowed classes {allowed} (option classes)")  # fmt: skip
                codes = pd.Categorical(values, categories=allowed).codes
                codes, names = np.asarray(codes, dtype=np.int64), tuple(allowed)
            else:
                codes, names = _classes(values, csv_path, column)
            labels = np.eye(len(names))[codes]
        else:
            task = "multilabel"
            names = tuple(label_cols)
            labels = parse_cells(frame, label_cols, BINARY_CELLS, csv_path)
            blank = labels == -2.0
            if options["missing"] == "error":
                for j, column in enumerate(label_cols):
                    raise_bad_rows(csv_path, column, blank[:, j], frame[column],
                                   "0 or 1 (blank cells need missing='mask')")  # fmt: skip
            labels[blank] = np.nan
        if options["check_files"]:
            require_files(paths, csv_path, image_dir)
        groups = frame[options["group_column"]].str.strip() if options["group_column"] else ids
        if options["group_column"]:  # blank ids would make one patient of unrelated images
            raise_bad_rows(csv_path, options["group_column"], _missing(groups), groups,
                           "a patient id, not blank or a missing-value marker (NA, nan, "
                           "...); give each image its patient's id")  # fmt: skip
        card = dataclasses.replace(
            self.card, label_names=names, task=task, modality=options["modality"]
        )
        return Dataset(
            name="folder",
            root=root,
            image_ids=ids.to_numpy(dtype=str),
            paths=paths,
            labels=labels,
            label_names=names,
            groups=groups.to_numpy(dtype=str),
            task=task,
            metadata=frame.drop(columns=[path_col, *extra, *label_cols]),
            options=options,
            revision=compute_revision("folder", [csv_path], options),
            card=card,
        )
