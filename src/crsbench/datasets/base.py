"""Dataset value types, the adapter base class and the ``DATASETS`` registry.

An adapter reads one dataset's real on-disk layout and returns a :class:`Dataset`: aligned,
read-only arrays of ids, absolute paths, labels and groups, plus a metadata frame. The
``revision`` of a dataset is the sha256 of its label files' bytes and of the options that
shape rows or labels, so a changed label file or label policy gives a new revision.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd

from crsbench.core.errors import ConfigError, DataError
from crsbench.core.registry import Registry
from crsbench.core.types import Task, check_task

from .containment import require_distinct_files, require_inside_root, resolved_paths

Modality = Literal["dermoscopy", "fundus", "chest_xray", "other"]
MODALITIES: tuple[str, ...] = ("dermoscopy", "fundus", "chest_xray", "other")
FORMAT_VERSION = 1

#: Options that never change which rows or labels a dataset has (left out of the revision).
NON_SEMANTIC_OPTIONS: frozenset[str] = frozenset({"check_files"})


@dataclass(frozen=True)
class DatasetCard:
    """Static facts about a dataset.

    Parameters
    ----------
    name : str
        Registry name (``"isic2019"``, ...).
    citation : str
        How to cite the dataset.
    licence : str
        The licence or data-use agreement it is released under.
    label_names : tuple of str
        Label (multilabel) or class (multiclass) names, in column order.
    task : {"multiclass", "multilabel"}
        Prediction task.
    modality : {"dermoscopy", "fundus", "chest_xray", "other"}
        Imaging modality.
    ordinal : bool
        True when the classes are ordered grades (APTOS diabetic retinopathy).
    access : str
        How to obtain the data (where to download it, what agreement it needs).
    provided_labels : tuple of str or None
        The labels the release can provide at most (the others are NaN columns, e.g. a shift
        target harmonised to CheXpert's 14); ``None`` means all of ``label_names``.
    """

    name: str
    citation: str
    licence: str
    label_names: tuple[str, ...]
    task: Task
    modality: Modality
    ordinal: bool = False
    access: str = ""
    provided_labels: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        check_task(self.task)
        if self.modality not in MODALITIES:
            raise ValueError(
                f"modality must be one of {MODALITIES}. Got {self.modality!r} instead."
            )


def _read_only(array: np.ndarray) -> np.ndarray:
    array = np.ascontiguousarray(array)
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)
class Dataset:
    """One dataset loaded from disk; rows are images, all arrays are aligned and read-only.

    Attributes
    ----------
    name : str
        Registry name of the adapter that produced it.
    root : Path
        The dataset root as given (resolved to an absolute path).
    image_ids : np.ndarray of str, shape (N,)
        Unique image identifiers.
    paths : np.ndarray of str, shape (N,)
        Absolute image paths.
    labels : np.ndarray of float64, shape (N, K)
        One-hot rows for multiclass; 0/1 (NaN where masked) for multilabel.
    label_names : tuple of str
        Names of the K label columns.
    groups : np.ndarray of str, shape (N,)
        Patient / lesion id, or the image id when the dataset has none.
    task : {"multiclass", "multilabel"}
        Prediction task.
    metadata : pandas.DataFrame
        Per-row extra columns (``sex``, ``age``, ``view``, ``official_split`` where they exist).
    options : dict
        The options the adapter used (defaults filled in).
    revision : str
        sha256 hex of the label files' bytes and the semantic options.
    card : DatasetCard
        Static facts about the dataset.
    notes : tuple of str
        What the adapter dropped or filtered, in words (view filter, orphans, ...).
    provided_labels : tuple of str or None
        The label columns this load can provide; every other column is all NaN (a target
        harmonised to another dataset's labels). ``None`` (default) means all of them.
    """

    name: str
    root: Path
    image_ids: np.ndarray
    paths: np.ndarray
    labels: np.ndarray
    label_names: tuple[str, ...]
    groups: np.ndarray
    task: Task
    metadata: pd.DataFrame
    options: dict[str, Any]
    revision: str
    card: DatasetCard
    notes: tuple[str, ...] = field(default=())
    provided_labels: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        n = len(self.image_ids)
        object.__setattr__(self, "image_ids", _read_only(np.asarray(self.image_ids, dtype=str)))
        object.__setattr__(self, "paths", _read_only(np.asarray(self.paths, dtype=str)))
        object.__setattr__(self, "groups", _read_only(np.asarray(self.groups, dtype=str)))
        labels = np.asarray(self.labels, dtype=np.float64)
        object.__setattr__(self, "labels", _read_only(labels))
        object.__setattr__(self, "label_names", tuple(self.label_names))
        check_task(self.task)
        if n == 0:
            raise DataError(f"dataset {self.name!r} at {self.root} is empty: it has 0 images.")
        for attr in ("paths", "groups", "metadata"):
            if len(getattr(self, attr)) != n:
                raise DataError(
                    f"dataset {self.name!r}: {attr} has {len(getattr(self, attr))} rows. "
                    f"Must match the {n} image ids."
                )
        if labels.shape != (n, len(self.label_names)):
            raise DataError(
                f"dataset {self.name!r}: labels must have shape {(n, len(self.label_names))}. "
                f"Got {labels.shape} instead."
            )
        if len(np.unique(self.image_ids)) != n:
            raise DataError(f"dataset {self.name!r}: image ids must be unique.")
        self._check_provided(labels)

    def _check_provided(self, labels: np.ndarray) -> None:
        if self.provided_labels is None:
            return
        provided = tuple(self.provided_labels)
        object.__setattr__(self, "provided_labels", provided)
        unknown = [name for name in provided if name not in self.label_names]
        if unknown:
            raise DataError(
                f"dataset {self.name!r}: provided_labels {unknown} must be label names. "
                f"Label names are {list(self.label_names)}."
            )
        for j, name in enumerate(self.label_names):
            if name not in provided and not np.isnan(labels[:, j]).all():
                raise DataError(
                    f"dataset {self.name!r}: label {name!r} is not provided, so its column "
                    "must be all NaN. It has values."
                )

    @property
    def provided_label_names(self) -> tuple[str, ...]:
        """The label columns this dataset provides (all of them unless stated otherwise)."""
        if self.provided_labels is None:
            return self.label_names
        return tuple(n for n in self.label_names if n in self.provided_labels)

    def __len__(self) -> int:
        return len(self.image_ids)

    def class_indices(self) -> np.ndarray:
        """Integer class of each row (multiclass only).

        Returns
        -------
        np.ndarray of int64, shape (N,)
            ``argmax`` of the one-hot label rows.
        """
        if self.task != "multiclass":
            raise DataError(
                f"class_indices() needs a multiclass dataset. Dataset {self.name!r} is {self.task}."
            )
        return np.argmax(self.labels, axis=1).astype(np.int64)


class DatasetAdapter:
    """Base class of the adapters held by :data:`DATASETS`.

    Subclasses set ``card`` and ``defaults`` (every accepted option with its default) and
    implement :meth:`_load`. ``check_files`` (bool, default True) is accepted by all.
    """

    card: ClassVar[DatasetCard]
    defaults: ClassVar[Mapping[str, Any]] = {}

    def resolve_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """Fill defaults; an unknown option raises :class:`ConfigError` with suggestions."""
        known = {"check_files": True, **dict(self.defaults)}
        for key in options:
            if key not in known:
                close = difflib.get_close_matches(key, list(known), n=3, cutoff=0.5)
                hint = f" Did you mean: {', '.join(close)}?" if close else ""
                raise ConfigError(
                    f"unknown option {key!r} for dataset {self.card.name!r}.{hint} "
                    f"Known options: {', '.join(sorted(known))}."
                )
        resolved = {**known, **dict(options)}
        if not isinstance(resolved["check_files"], bool):
            raise ConfigError(
                f"check_files must be a bool. Got {resolved['check_files']!r} instead."
            )
        return resolved

    def load(self, root: str | Path, **options: Any) -> Dataset:
        """Read the dataset under ``root``; see the adapter's module for its layout."""
        resolved = self.resolve_options(options)
        root_path = Path(root).expanduser()
        if not root_path.is_dir():
            raise DataError(
                f"dataset root must be an existing directory. Got {str(root_path)!r} instead."
            )
        data = self._load(root_path.resolve(), resolved)
        real = resolved_paths(data.paths)
        if not resolved.get("allow_outside_root", False):
            require_inside_root(data.paths, data.image_ids, root_path.resolve(), data.name, real)
        require_distinct_files(data.paths, data.image_ids, real, data.name)
        return data

    def _load(self, root: Path, options: dict[str, Any]) -> Dataset:  # pragma: no cover
        raise NotImplementedError


DATASETS: Registry[type[DatasetAdapter]] = Registry("dataset")


def compute_revision(name: str, label_files: list[Path], options: Mapping[str, Any]) -> str:
    """sha256 over the adapter name, each label file's bytes and the semantic options."""
    digest = hashlib.sha256(f"crsbench-dataset|{name}|v{FORMAT_VERSION}".encode())
    for path in label_files:
        digest.update(f"|file:{path.name}|".encode())
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    semantic = {k: v for k, v in options.items() if k not in NON_SEMANTIC_OPTIONS}
    digest.update(json.dumps(semantic, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def load(name: str, root: str | Path, **options: Any) -> Dataset:
    """Load dataset ``name`` from ``root``.

    Parameters
    ----------
    name : str
        One of ``DATASETS.names()``: ``isic2019``, ``aptos2019``, ``chexpert``,
        ``mimic_cxr``, ``folder``.
    root : str or Path
        Directory holding the dataset in its official layout (see ``docs/datasets.md``).
    **options
        Adapter options, e.g. ``uncertainty="zeros"`` for the chest X-ray datasets, or
        ``check_files=False`` to skip the image existence check.

    Returns
    -------
    Dataset

    Raises
    ------
    DataError
        When files are missing or malformed (the message names file, row, column, value).
    ConfigError
        When an option is unknown or out of range.
    """
    adapter = DATASETS.get(name)()
    return adapter.load(root, **options)


def check_choice(option: str, value: Any, choices: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise :class:`ConfigError`."""
    if value not in choices:
        raise ConfigError(f"{option} must be one of {choices}. Got {value!r} instead.")
    return str(value)
