"""The predictions one cell's analyses read: the rows each is evaluated on, and the cell's
main-protocol probabilities (clean, label fractions, conditions, shift targets, validation).

Built from a results store by :func:`crsbench.stats.store_predictions.load_store_predictions`
(or planted by :mod:`crsbench.testing`); read by the patient bootstrap, the subgroup,
operating-point and flip analyses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class EvalSplit:
    """The rows one prediction is evaluated on: whose patients, which patient each row is,
    and the targets (class indices, or an ``(n, L)`` 0/1/NaN matrix); read from a store, also
    the image ids and the subgroup attributes stored with them (attribute → ``(n,)`` str)."""

    dataset: str
    groups: np.ndarray
    y: np.ndarray
    image_ids: np.ndarray | None = None
    metadata: Mapping[str, np.ndarray] = field(default_factory=dict)

    @property
    def n_patients(self) -> int:
        """Distinct patients (groups) of the split."""
        return int(len(np.unique(np.asarray(self.groups).astype(str))))


@dataclass(frozen=True)
class CellPredictions:
    """Test-set probabilities of one cell's main-protocol rows.

    Every probability array is ``(n, K)`` when it does not vary over seeds (the full-label
    logistic fit) or ``(S, n, K)`` with one slice per seed of ``seeds``.

    Attributes
    ----------
    clean : array
        Full-label probabilities on the clean test rows (D, C and the reference of R).
    fractions : mapping fraction → array
        Probabilities of the probes fitted on each label fraction < 1 (retention).
    conditions : mapping (perturbation, severity) → array
        Full-label probabilities on the same test rows under each robustness condition.
    shift : (EvalSplit, array) or None
        The shift target's rows and the full-label probabilities on them.
    more_shifts : tuple of (EvalSplit, array)
        Further shift targets inside R (each drop is one more condition).
    val : (EvalSplit, array) or None
        The full-label fit's validation rows and probabilities (operating points).
    extra_shifts : tuple of (EvalSplit, array)
        Shift targets outside R (e.g. NIH ChestX-ray14): read by the operating-point
        transfer, and by the bootstrap only for the verdict's shift-calibration question
        (never inside R).
    label_names : tuple of str
        The dataset's label (or class) names in output order, as the store records them
        (:mod:`crsbench.store.cards`); empty when the store does not.
    """

    encoder: str
    dataset: str
    task: str
    test: EvalSplit
    seeds: tuple[int, ...]
    clean: np.ndarray
    fractions: Mapping[float, np.ndarray] = field(default_factory=dict)
    conditions: Mapping[tuple[str, int], np.ndarray] = field(default_factory=dict)
    shift: tuple[EvalSplit, np.ndarray] | None = None
    more_shifts: tuple[tuple[EvalSplit, np.ndarray], ...] = ()
    val: tuple[EvalSplit, np.ndarray] | None = None
    extra_shifts: tuple[tuple[EvalSplit, np.ndarray], ...] = ()
    label_names: tuple[str, ...] = ()

    @property
    def shifts(self) -> tuple[tuple[EvalSplit, np.ndarray], ...]:
        """Every shift target inside R."""
        return ((self.shift,) if self.shift is not None else ()) + tuple(self.more_shifts)
