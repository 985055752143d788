"""The predictions one cell's analyses read: the rows each is evaluated on, and the cell's
main-protocol probabilities (clean, label fractions, conditions, shift targets, validation).

Built from a results store by :func:`crsbench.stats.store_predictions.load_store_predictions`
(or planted by :mod:`crsbench.testing`); read by the patient bootstrap, the subgroup,
operating-point and flip analyses.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TypeVar

import numpy as np

T = TypeVar("T")


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

    def widened(self) -> CellPredictions:
        """The cell with every probability array as float64 (itself when all already are).

        A store's predictions may be held compact, in the float32 they are stored in (half
        the memory for a whole panel's cells); every function that computes on a cell's
        probabilities (the bootstrap's axes and shrunk ECE, subgroups, flips, operating
        points) widens it first, one cell at a time, and so computes on the float64 values,
        which are exactly those. An array shared by two fields stays shared.
        """
        if all(a.dtype == np.float64 for a in self.probability_arrays()):
            return self
        made: dict[int, np.ndarray] = {}

        def wide(a: np.ndarray) -> np.ndarray:
            if id(a) not in made:
                made[id(a)] = np.asarray(a, dtype=np.float64)
            return made[id(a)]

        def pairs(found: tuple[tuple[EvalSplit, np.ndarray], ...]) -> tuple:
            return tuple((split, wide(p)) for split, p in found)

        return replace(
            self, clean=wide(self.clean),
            fractions={f: wide(p) for f, p in self.fractions.items()},
            conditions={c: wide(p) for c, p in self.conditions.items()},
            shift=None if self.shift is None else (self.shift[0], wide(self.shift[1])),
            more_shifts=pairs(self.more_shifts), extra_shifts=pairs(self.extra_shifts),
            val=None if self.val is None else (self.val[0], wide(self.val[1])),
        )  # fmt: skip

    def probability_arrays(self) -> list[np.ndarray]:
        """Every probability array of the cell (clean, fractions, conditions, shift targets,
        validation), each once per field it fills."""
        found = [self.clean, *self.fractions.values(), *self.conditions.values()]
        found += [p for _, p in (*self.shifts, *self.extra_shifts)]
        return found + ([self.val[1]] if self.val is not None else [])


def seed_slices(prob: np.ndarray, n_seeds: int) -> list[np.ndarray]:
    """One ``(n, K)`` array per seed: ``prob`` repeated (the same object) when it does not
    vary over seeds."""
    return [prob] * n_seeds if prob.ndim == 2 else list(prob)


def once_each(fn: Callable[..., T], per_seed: list[tuple]) -> list[T]:
    """``[fn(*args) for args in per_seed]``, each distinct ``args`` computed once.

    Arguments are the same when they are the same objects, except 0-d and 1-d arrays and
    numbers, compared by value (a seed's thresholds); ``None`` equals ``None``. A full-label
    fit is one matrix for every seed (:func:`seed_slices`), so what is computed from it per
    seed is computed once and repeated, and a mean over seeds is the same number.
    """
    done: dict[tuple, tuple[tuple, T]] = {}  # the arguments stay alive: no id is reused
    out = []
    for args in list(per_seed):
        key = tuple(_identity(a) for a in args)
        if key not in done:
            done[key] = (args, fn(*args))
        out.append(done[key][1])
    return out


def _identity(arg: object) -> object:
    if arg is None:
        return None
    if isinstance(arg, np.ndarray) and arg.ndim > 1:
        return ("object", id(arg))
    if isinstance(arg, (np.ndarray, float, int, np.floating, np.integer)):
        value = np.asarray(arg)
        return ("value", value.dtype.str, value.shape, value.tobytes())
    return ("object", id(arg))
