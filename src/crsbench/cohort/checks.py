"""Bad cohorts get a named answer before anything is written.

Every check here runs before the profile claims its output folder, so a refused cohort leaves
nothing behind. Each refusal is a :class:`CohortError` naming the file, the data row (and file
line), the column and the value, and saying what to do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from crsbench.core.errors import DataError

#: Fewest patients holding a class (a label's positives, and its negatives) for the four
#: splits (train, validation, calibration, test) to get one each.
MIN_PATIENTS_PER_CLASS = 4


class CohortError(DataError):
    """A cohort the profile cannot run on; the message ends with what to do."""

    def __init__(self, problem: str, what_to_do: str) -> None:
        super().__init__(f"{problem}\nWhat to do: {what_to_do}")


@dataclass(frozen=True)
class CohortSummary:
    """What the profile prints and the verdict shows about the cohort."""

    n_images: int
    n_patients: int
    task: str
    labels: tuple[str, ...]
    prevalence: dict[str, float]
    positives: dict[str, int]
    split_sizes: dict[str, int]
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly form (``cohort.json``)."""
        return {**self.__dict__, "labels": list(self.labels), "warnings": list(self.warnings)}


def _line(row: int) -> str:
    return f"data row {row + 1} (line {row + 2})"


def label_matrix(ds: Any) -> np.ndarray:
    """0/1 float labels with NaN where masked (one-hot rows for a multi-class cohort)."""
    return np.asarray(ds.labels, dtype=np.float64)


def check_patient_labels(ds: Any, csv: Path, group_column: str, rows: np.ndarray) -> None:
    """Refuse a patient whose rows carry different labels.

    ``rows`` maps dataset rows to CSV data rows (0-based).
    """
    import pandas as pd

    labels = label_matrix(ds)
    frame = pd.DataFrame(np.where(np.isnan(labels), -1.0, labels))
    frame["__g"] = np.asarray(ds.groups)
    distinct = frame.drop_duplicates().groupby("__g").size()
    bad = distinct[distinct > 1]
    if bad.empty:
        return
    patient = str(bad.index[0])
    mine = np.flatnonzero(np.asarray(ds.groups) == patient)
    first, other = int(mine[0]), next(int(r) for r in mine if not _same(labels, mine[0], r))
    cols = [n for j, n in enumerate(ds.label_names) if not _same_at(labels, first, other, j)]
    shown = ", ".join(f"{_value(ds, first, n)} vs {_value(ds, other, n)}" for n in cols[:1])
    raise CohortError(
        f"{csv}: patient {patient!r} (column {group_column!r}) has conflicting labels: "
        f"{_line(int(rows[first]))} and {_line(int(rows[other]))} differ in "
        f"{_columns_text(ds, cols)} ({shown}). {len(bad)} patient(s) conflict in total.",
        "correct the rows of that patient so they agree, or, if labels are per image (a "
        "patient may have images with different findings), pass --labels-per-image "
        "(YAML: labels_per_image: true).",
    )


def _same(labels: np.ndarray, a: int, b: int) -> bool:
    return bool(np.array_equal(labels[a], labels[b], equal_nan=True))


def _same_at(labels: np.ndarray, a: int, b: int, j: int) -> bool:
    x, y = labels[a, j], labels[b, j]
    return bool(x == y or (np.isnan(x) and np.isnan(y)))


def _columns_text(ds: Any, cols: list[str]) -> str:
    if ds.task == "multiclass":
        return "the class column"
    return "column(s) " + ", ".join(repr(c) for c in cols)


def _value(ds: Any, row: int, name: str) -> str:
    labels = label_matrix(ds)
    if ds.task == "multiclass":
        return repr(ds.label_names[int(np.argmax(labels[row]))])
    v = labels[row, ds.label_names.index(name)]
    return "blank" if np.isnan(v) else repr(str(int(v)))


def _patients_with(ds: Any, value: float) -> np.ndarray:
    """Per label: patients with at least one row equal to ``value`` (1 positive, 0 negative)."""
    labels = label_matrix(ds)
    groups = np.asarray(ds.groups).astype(str)
    out = np.zeros(labels.shape[1], dtype=np.int64)
    for j in range(labels.shape[1]):
        out[j] = len(np.unique(groups[labels[:, j] == value]))
    return out


def check_two_classes(ds: Any, csv: Path, label_columns: tuple[str, ...]) -> None:
    """Refuse a single-class column: no probe, AUROC or calibration is defined on it."""
    if ds.task != "multiclass" or len(ds.label_names) >= 2:
        return
    only = ds.label_names[0] if ds.label_names else ""
    raise CohortError(
        f"{csv}: column {label_columns[0]!r} holds one class only ({only!r} in all "
        f"{len(ds)} rows); a profile needs at least two classes.",
        "add images of another class (e.g. the negatives: 'normal', 0), or pass several 0/1 "
        "columns with --label-columns for a multi-label cohort.",
    )


def check_class_counts(ds: Any, csv: Path, label_columns: tuple[str, ...]) -> None:
    """Refuse a class held by fewer patients than the four splits need."""
    sides = [(1.0, "positive")] + ([(0.0, "negative")] if ds.task == "multilabel" else [])
    for value, side in sides:
        counts = _patients_with(ds, value)
        low = np.flatnonzero(counts < MIN_PATIENTS_PER_CLASS)
        if len(low):
            name = ds.label_names[int(low[0])]
            where = (f"class {name!r} of column {label_columns[0]!r}" if ds.task == "multiclass"
                     else f"column {name!r} ({side} rows)")  # fmt: skip
            raise CohortError(
                f"{csv}: {where} is held by {int(counts[low[0]])} patient(s); the four splits "
                f"(train, validation, calibration, test) need at least "
                f"{MIN_PATIENTS_PER_CLASS}. {len(low)} class(es) are short.",
                "add images of that class from more patients, merge it with a related class, "
                "or leave the column out of --label-columns.",
            )


def check_split_classes(ds: Any, splits: Any, csv: Path, min_calib: int) -> list[str]:
    """Refuse a class absent from the test (or train / validation) split; warn for a small
    calibration split. Returns the warnings."""
    labels = label_matrix(ds)
    warnings: list[str] = []
    for split in ("test", "train", "val", "calib"):
        idx = np.asarray(getattr(splits, split))
        pos = np.nansum(labels[idx] == 1.0, axis=0)
        neg = np.nansum(labels[idx] == 0.0, axis=0) if ds.task == "multilabel" else pos * 0 + 1
        short = np.flatnonzero((pos == 0) | (neg == 0))
        if split == "calib":
            few = np.flatnonzero(np.minimum(pos, neg if ds.task == "multilabel" else pos)
                                 < min_calib)  # fmt: skip
            if len(few):
                warnings.append(
                    f"the calibration split holds {int(pos[few[0]])} image(s) of class "
                    f"{ds.label_names[int(few[0])]!r} (< {min_calib} per class): the "
                    "recalibrated rows are undefined (NaN, with the reason) for this cohort"
                )
            continue
        if len(short):
            name = ds.label_names[int(short[0])]
            side = "positive" if pos[short[0]] == 0 else "negative"
            raise CohortError(
                f"{csv}: class {name!r} has no {side} image in the {split} split "
                f"({len(idx)} images; the split is made by patient, stratified by label). "
                f"{len(short)} class(es) are absent from it.",
                "add images of that class from more patients (every split needs each class), "
                "or merge the class with a related one.",
            )
    return warnings


def check_images(
    ds: Any, csv: Path, path_column: str, rows: np.ndarray, bounds: Any = None
) -> list[str]:
    """Refuse missing or unreadable images (outside ``bounds``, the spec's ``image_bounds``,
    included) beyond the bad-image budget; list the others."""
    from crsbench.datasets.bad_images import MAX_BAD_FRACTION, bad_image_budget
    from crsbench.datasets.files import probe_images

    problems = probe_images(np.asarray(ds.paths), bounds=bounds)
    budget = bad_image_budget(len(ds.paths))
    lines = [
        f"{_line(int(rows[p.row]))}, column {path_column!r}: {p.path} ({p.error_class})"
        for p in problems
    ]
    if len(problems) > budget:
        more = f"; ... and {len(lines) - 20} more" if len(lines) > 20 else ""
        raise CohortError(
            f"{csv}: {len(problems)} of {len(ds.paths)} images are missing or unreadable; at "
            f"most {budget} ({MAX_BAD_FRACTION:.0%}) can be left out. "
            + "; ".join(lines[:20])
            + more,
            "put the missing files in place (paths are relative to --images), replace the "
            "unreadable ones, or delete their rows from the CSV.",
        )
    return [f"left out (unreadable, within the {budget}-image budget): {x}" for x in lines]
