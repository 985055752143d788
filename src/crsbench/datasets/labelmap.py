"""Label harmonisation: a shift target's finding names → CheXpert's 14 labels, from data.

Each map is a versioned YAML file in ``crsbench/resources/label_maps/`` (``<dataset>_v<N>.yaml``)
read with :mod:`importlib.resources`. Under ``labels`` each CheXpert label lists the target's
findings that make it positive (any of them); ``not_provided`` names the labels the target
cannot give (NaN columns) with the reason; ``ignored`` lists the target's findings that have
no CheXpert counterpart. A finding in the data that is none of these aborts the load, naming
the file, the row and the value. Names are compared after stripping spaces and ignoring case.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from crsbench.core.errors import DataError
from crsbench.resources import resource_file, resource_label, resource_names

from .chexpert import CHEXPERT_LABELS
from .csvio import row_list

MAP_FORMAT = "crsbench-label-map"


def normalise(names: pd.Series) -> pd.Series:
    """The comparison form of finding names: surrounding spaces stripped, case folded."""
    return names.astype(str).str.strip().str.casefold()


@dataclass(frozen=True)
class LabelMap:
    """One validated label map (see the module docstring for the file layout).

    Attributes
    ----------
    dataset, version, file : str, int, str
        Target dataset, map version, and the file it was read from (for messages).
    source : str
        Where the finding names and the correspondence come from.
    labels : dict[str, tuple[str, ...]]
        CheXpert label → the target findings that make it positive.
    not_provided : dict[str, str]
        CheXpert label → why the target cannot provide it.
    ignored : tuple of str
        Target findings with no CheXpert counterpart.
    extra : dict
        Other top-level keys of the file (e.g. ``known_bad_images``).
    """

    dataset: str
    version: int
    file: str
    source: str
    labels: dict[str, tuple[str, ...]]
    not_provided: dict[str, str]
    ignored: tuple[str, ...]
    extra: dict[str, Any]

    @property
    def name(self) -> str:
        """``<dataset>_v<version>``, the id recorded with a dataset's options."""
        return f"{self.dataset}_v{self.version}"

    def provided(self, available: Sequence[str] | None = None) -> tuple[str, ...]:
        """CheXpert labels this map can give, in CheXpert order.

        ``available`` restricts the target's findings (a layout with fewer classes): a label
        whose findings are all absent from it is not provided.
        """
        have = None if available is None else set(normalise(pd.Series(list(available))))
        return tuple(
            label
            for label in CHEXPERT_LABELS
            if label in self.labels
            and (have is None or any(f.casefold() in have for f in self.labels[label]))
        )

    def known(self) -> set[str]:
        """Comparison forms of every finding the map names (mapped or ignored)."""
        mapped = {f for findings in self.labels.values() for f in findings}
        return {name.strip().casefold() for name in (*mapped, *self.ignored)}

    def require_known(self, path: Path, column: str, rows: np.ndarray, names: pd.Series) -> None:
        """Raise :class:`DataError` at the first finding name the map does not know.

        Parameters
        ----------
        path : Path
            The label file, for the message.
        column : str
            Column holding the names, or ``"header"`` when the names are label columns.
        rows : np.ndarray of int
            0-based data row of each name.
        names : pandas.Series of str
            The names as written in the file.
        """
        bad = ~normalise(names).isin(self.known()).to_numpy()
        if not bad.any():
            return
        first = int(np.flatnonzero(bad)[0])
        bad_rows = np.unique(np.asarray(rows)[bad])
        unknown = f"which label map {self.file} does not know"
        must = (
            "Every finding must be mapped to a CheXpert label or listed under 'ignored' in "
            "that map (a new map version)."
        )
        if column == "header":
            raise DataError(
                f"{path}: the header has the label column {names.iloc[first]!r}, {unknown}. {must}"
            )
        raise DataError(
            f"{path}: column {column!r} has the finding {names.iloc[first]!r} at data row "
            f"{int(rows[first]) + 1} (line {int(rows[first]) + 2}), {unknown}. "
            f"{len(bad_rows)} row(s) have unknown findings (data rows {row_list(bad_rows)}). {must}"
        )

    def matrix(self, present: Mapping[str, np.ndarray], n_rows: int) -> np.ndarray:
        """CheXpert label matrix from per-finding presence vectors.

        Parameters
        ----------
        present : mapping of str to np.ndarray of bool, shape (N,)
            Finding name (any case) → whether the image has it; findings absent from the
            mapping are taken as absent for every image.
        n_rows : int
            Number of images N.

        Returns
        -------
        np.ndarray of float64, shape (N, 14)
            1/0 for provided labels, NaN columns for labels not provided (by the map, or by
            ``present`` having none of a label's findings as keys).
        """
        folded = {k.strip().casefold(): np.asarray(v, dtype=bool) for k, v in present.items()}
        out = np.full((n_rows, len(CHEXPERT_LABELS)), np.nan)
        for j, label in enumerate(CHEXPERT_LABELS):
            keys = [f.casefold() for f in self.labels.get(label, ()) if f.casefold() in folded]
            if keys:
                out[:, j] = np.logical_or.reduce([folded[k] for k in keys]).astype(np.float64)
        return out

    def from_long(self, rows: np.ndarray, names: pd.Series, n_rows: int) -> np.ndarray:
        """Label matrix from (row, finding name) pairs (each pair: the image has the finding).

        Names must already be checked with :meth:`require_known`.
        """
        codes, uniques = pd.factorize(normalise(names), sort=False)
        rows = np.asarray(rows, dtype=np.int64)
        code_of = {str(u): k for k, u in enumerate(uniques)}
        present = {}
        for finding in {f.casefold() for fs in self.labels.values() for f in fs}:
            mask = np.zeros(n_rows, dtype=bool)
            if finding in code_of:
                mask[rows[codes == code_of[finding]]] = True
            present[finding] = mask
        return self.matrix(present, n_rows)


def _fail(file: str, message: str) -> DataError:
    return DataError(f"label map {file}: {message}")


def _string_list(file: str, key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise _fail(file, f"{key} must be a list of non-empty strings. Got {value!r} instead.")
    return tuple(value)


def parse_label_map(data: Any, file: str) -> LabelMap:
    """Validate the parsed YAML of a label map (see the module docstring)."""
    if not isinstance(data, dict) or data.get("format") != MAP_FORMAT:
        raise _fail(file, f"must be a mapping with format: {MAP_FORMAT}.")
    for key in ("dataset", "version", "source", "labels"):
        if key not in data:
            raise _fail(file, f"key {key!r} absent. Must have dataset, version, source, labels.")
    labels_raw = data["labels"]
    not_provided = data.get("not_provided") or {}
    if not isinstance(labels_raw, dict) or not isinstance(not_provided, dict):
        raise _fail(file, "labels and not_provided must be mappings.")
    labels = {k: _string_list(file, f"labels[{k!r}]", v) for k, v in labels_raw.items()}
    named = [*labels, *not_provided]
    if sorted(named) != sorted(CHEXPERT_LABELS):
        raise _fail(
            file,
            f"labels and not_provided together must name each CheXpert label once. Got "
            f"missing {sorted(set(CHEXPERT_LABELS) - set(named))}, unknown or repeated "
            f"{sorted(n for n in named if n not in CHEXPERT_LABELS or named.count(n) > 1)}.",
        )
    ignored = _string_list(file, "ignored", data.get("ignored") or [])
    mapped = {f.strip().casefold() for fs in labels.values() for f in fs}
    clash = sorted(f for f in ignored if f.strip().casefold() in mapped)
    if clash:
        raise _fail(
            file, f"findings {clash} are both mapped and ignored. Must be one or the other."
        )
    known = {"format", "dataset", "version", "target", "source", "labels", "not_provided"}
    return LabelMap(
        dataset=str(data["dataset"]),
        version=int(data["version"]),
        file=file,
        source=" ".join(str(data["source"]).split()),
        labels=labels,
        not_provided={str(k): str(v) for k, v in not_provided.items()},
        ignored=ignored,
        extra={k: v for k, v in data.items() if k not in known | {"ignored"}},
    )


@lru_cache(maxsize=16)
def load_label_map(name: str) -> LabelMap:
    """Load and validate the packaged label map ``name`` (e.g. ``"nih_cxr14_v1"``)."""
    resource = resource_file("label_maps", f"{name}.yaml")
    if not resource.is_file():
        available = resource_names("label_maps")
        raise DataError(f"label map {name!r} does not exist. Available: {available}.")
    file = resource_label("label_maps", f"{name}.yaml")
    return parse_label_map(yaml.safe_load(resource.read_text(encoding="utf-8")), file)
