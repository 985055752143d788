"""Result types of the extraction engine."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from crsbench.core.types import Condition

ResultKey = tuple[tuple[str, int], float]


def as_condition(c: Condition | tuple[str, int] | str) -> Condition:
    """Normalise ``"clean"``, ``("blur", 2)`` or a :class:`Condition` to a Condition."""
    if isinstance(c, Condition):
        return c
    if isinstance(c, str):
        return Condition(c, 0)
    name, severity = c
    return Condition(str(name), int(severity))


@dataclass(frozen=True)
class FeatureArray:
    """Features of one (condition, depth), rows aligned with ``ids``.

    Attributes
    ----------
    features : numpy.ndarray
        (n, d) array, a read-only memory map of the verified cache entry.
    ids : numpy.ndarray
        Image ids of the rows, in the requested order, quarantined images left out.
    condition : Condition
        The perturbation condition (``Condition("clean", 0)`` for clean images).
    depth : float
        Relative depth of the layer tap (1.0 = last block).
    key : str
        Cache key of the entry.
    status : str
        ``"hit"`` if read from the cache as a whole, ``"computed"`` otherwise.
    """

    features: np.ndarray
    ids: np.ndarray
    condition: Condition
    depth: float
    key: str
    status: str


@dataclass
class ExtractionResult(Mapping[ResultKey, FeatureArray]):
    """Mapping ``((name, severity), depth) -> FeatureArray`` plus the run's bookkeeping.

    Lookups also accept a :class:`Condition` or a bare condition name as the first element.

    Attributes
    ----------
    arrays : dict
        The feature arrays.
    quarantined : list of dict
        Images skipped because they could not be decoded (path, row, image_id, error_class,
        message).
    cache_events : list of dict
        Corrupt cache entries detected (and recomputed) during this run.
    n_decoded : int
        Images decoded in this run (0 when every entry was a cache hit).
    seconds : float
        Wall time of the run.
    """

    arrays: dict[ResultKey, FeatureArray] = field(default_factory=dict)
    quarantined: list[dict[str, Any]] = field(default_factory=list)
    cache_events: list[dict[str, Any]] = field(default_factory=list)
    n_decoded: int = 0
    seconds: float = 0.0

    @staticmethod
    def _norm(key: Any) -> ResultKey:
        cond, depth = key
        c = as_condition(cond)
        return ((c.name, c.severity), float(depth))

    def __getitem__(self, key: Any) -> FeatureArray:
        return self.arrays[self._norm(key)]

    def __iter__(self) -> Iterator[ResultKey]:
        return iter(self.arrays)

    def __len__(self) -> int:
        return len(self.arrays)
