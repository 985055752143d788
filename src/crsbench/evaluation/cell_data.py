"""The inputs of one cell's evaluation: its data (no pixels), the probe settings, and the
state shared while its probes are scored."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from crsbench.evaluation.cell_scoring import RowScorer
from crsbench.evaluation.identity import CellIdentity
from crsbench.evaluation.prediction_keeper import PredictionKeeper
from crsbench.protocol import LOGISTIC_MAX_ITER, LOGISTIC_STOP, LOGISTIC_TOL
from crsbench.store.details import RunDetails, ShiftDetails


@dataclass(frozen=True)
class ShiftData:
    """Clean features and labels of a shift target's evaluation rows.

    ``details`` go into every shift record's ``details`` (``shift_rows``: which rows, how many
    images and patients; the target's revision). ``compared`` is the mask of the label columns both sides provide when
    it leaves out a label the source provides (``y`` is then NaN outside it, and each record
    also carries the source's clean AUROC on those labels, see
    :mod:`crsbench.core.shift_labels`); ``None`` when every source label is compared.
    """

    target: str
    X: np.ndarray
    y: np.ndarray
    details: ShiftDetails = field(default_factory=ShiftDetails)
    image_ids: np.ndarray | None = None
    groups: np.ndarray | None = None
    compared: np.ndarray | None = None
    label_names: tuple[str, ...] = ()
    metadata: Mapping[str, np.ndarray] | None = None


@dataclass(frozen=True)
class CellData:
    """Everything one cell needs: labels, split indices and features (no pixels).

    Attributes
    ----------
    features : mapping depth → (N, D) array
        Clean features of every row of the dataset, per layer depth.
    perturbed : mapping (name, severity) → (n_test, D) array
        Depth-1.0 features of the test rows (in ``test`` order) under each condition.
    subsets : mapping (fraction, seed) → index array into ``train``
        Nested label subsamples.
    shifts : tuple of ShiftData
        The shift targets of this cell's dataset, in the config's order.
    n_quarantined : mapping split → int
        Undecodable images left out per split (``shift``: the target's rows); every run
        row of the cell carries it in ``details["n_quarantined"]``.
    quarantined : tuple of dict
        Those images (``dataset``, ``split``, ``image_id``, ``path``, ``error_class``, ``message``).
    image_ids, groups : (N,) arrays or None
        Image id and patient group of every row; with them the main-protocol rows keep their
        per-sample predictions (:mod:`crsbench.evaluation.prediction_keeper`).
    metadata : mapping attribute → (N,) array of str, or None
        Subgroup attributes of every row (:func:`crsbench.datasets.subgroup_attributes.subgroup_columns`),
        stored with the predictions.
    """

    encoder: str
    dataset: str
    task: str
    n_outputs: int
    labels: np.ndarray
    train: np.ndarray
    val: np.ndarray
    calib: np.ndarray
    test: np.ndarray
    features: Mapping[float, np.ndarray]
    perturbed: Mapping[tuple[str, int], np.ndarray]
    subsets: Mapping[tuple[float, int], np.ndarray]
    shifts: tuple[ShiftData, ...] = ()
    n_quarantined: Mapping[str, int] = field(default_factory=dict)
    quarantined: tuple[Mapping[str, str], ...] = ()
    image_ids: np.ndarray | None = None
    groups: np.ndarray | None = None
    metadata: Mapping[str, np.ndarray] | None = None


@dataclass(frozen=True)
class CellSettings:
    """The probe budget and what to evaluate; the same for every encoder."""

    seeds: Sequence[int]
    fractions: Sequence[float]
    Cs: Sequence[float]
    max_iter: int = LOGISTIC_MAX_ITER
    tol: float = LOGISTIC_TOL
    stop: str = LOGISTIC_STOP
    layers: Sequence[float] = (1.0,)
    recalibrators: Sequence[str] = ()
    mlp: Mapping[str, Any] | None = None
    knn: Mapping[str, Any] | None = None
    control_fractions: Sequence[float] = (1.0,)
    extra: Mapping[str, Any] = field(default_factory=dict)


Predict = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class CellRun:
    """One cell's evaluation in progress: its data and settings, its targets, the scorer
    every probe shares (scores of shared models are reused) and the keeper of its
    main-protocol predictions."""

    cell: CellData
    settings: CellSettings
    y: np.ndarray
    scorer: RowScorer
    keeper: PredictionKeeper
    ids: CellIdentity

    @property
    def y_test(self) -> np.ndarray:
        """The targets of the test rows."""
        return self.y[self.cell.test]


@dataclass(frozen=True)
class FittedProbe:
    """A full-label probe of one seed: how it predicts, what its rows record in ``details``
    and its fingerprint (the memo key's first part)."""

    seed: int
    probe: str
    predict: Predict
    extra: RunDetails
    mkey: str
