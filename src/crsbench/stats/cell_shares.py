"""The test-set bootstrap's work shared out to worker processes: groups of cells of one dataset.

Every cell of a dataset resamples the same patients in a replicate (the counts are a pure
function of the dataset and the replicate), so a worker given several cells of one dataset
draws each chunk's counts once for all of them (:func:`crsbench.stats.cell_axes.group_replicates`)
instead of once per cell. :func:`share_groups` splits each dataset's cells into at least as many
groups as there are workers (so every worker has work) and into more where a group would hold
more than :data:`GROUP_BYTES` (its cells' probabilities in float64 and their sorted score
columns, kept for every chunk); :func:`group_shares` is a worker's task. The numbers are a
cell's own whatever group it is in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from crsbench.stats.cell_axes import (
    DEFAULT_CHUNK,
    cell_point_values,
    cell_shrunk_ece,
    group_replicates,
    seed_mean,
)
from crsbench.stats.cell_predictions import CellPredictions

#: The most bytes a group may hold for every chunk of replicates: its cells' probabilities in
#: float64 (8 bytes per row, label and prediction) and their sorted score columns (about 5).
GROUP_BYTES = 2**30
_BYTES_PER_ELEMENT = 8 + 5


@dataclass(frozen=True)
class CellShare:
    """One cell's share of the test-set bootstrap (what a worker returns): the replicates of
    :func:`crsbench.stats.cell_axes.cell_replicates` and the values of the test set as drawn.

    Attributes
    ----------
    axes, ece_shrunk, extras
        ``(B, 4)`` seed-mean axes, ``(B,)`` shrunk-world ECE and ``(B,)`` extras.
    point_axes, point_extras, point_ece_shrunk
        The same on the test set as drawn: ``(1, 4)``, floats, a float.
    """

    axes: np.ndarray
    ece_shrunk: np.ndarray
    extras: dict[str, np.ndarray]
    point_axes: np.ndarray
    point_extras: dict[str, float]
    point_ece_shrunk: float


def group_shares(
    cells: Sequence[CellPredictions],
    replicates: np.ndarray,
    seed_counts: np.ndarray,
    seed: int = 0,
    chunk: int = DEFAULT_CHUNK,
) -> list[CellShare]:
    """Each cell's :class:`CellShare`, the replicates of all of them chunk by chunk (each
    chunk's counts drawn once), the point values computed where the cells are (a worker)."""
    parts = group_replicates(cells, replicates, seed_counts, seed, chunk)
    return [_share(c, *p) for c, p in zip(cells, parts, strict=True)]


def _share(cell: CellPredictions, axes, shrunk, extras) -> CellShare:
    point_axes, point_extras = cell_point_values(cell)
    ones = np.ones((1, len(cell.seeds)), dtype=int)
    point_shrunk = float(seed_mean(cell_shrunk_ece(cell, None), ones)[0])
    return CellShare(axes, shrunk, extras, point_axes, point_extras, point_shrunk)


def share_groups(elements: Sequence[int], datasets: Sequence[str], n_jobs: int) -> list[list[int]]:
    """Indices of the cells in each worker task, the largest tasks first.

    Parameters
    ----------
    elements : sequence of int
        Each cell's rows × labels × predictions (its work per replicate, and its sorted
        columns' size).
    datasets : sequence of str
        Each cell's dataset (cells of one dataset share their resample counts).
    n_jobs : int
        Worker processes.
    """
    groups: list[list[int]] = []
    for name in dict.fromkeys(datasets):  # datasets in order of first appearance
        members = [i for i, d in enumerate(datasets) if d == name]
        items = [(elements[i], i) for i in members]
        size = sum(elements[i] for i in members) * _BYTES_PER_ELEMENT
        # a multiple of the workers, so that the dataset's groups share out evenly
        n_groups = min(len(members), n_jobs * max(1, -(-size // (GROUP_BYTES * n_jobs))))
        split = _balanced(items, n_groups)
        while n_groups < len(members) and _held(split, elements) > GROUP_BYTES:
            n_groups += 1  # a group of several cells above the bound: one group more
            split = _balanced(items, n_groups)
        groups += split
    return sorted(groups, key=lambda g: -sum(elements[i] for i in g))


def _held(split: list[list[int]], elements: Sequence[int]) -> int:
    """Bytes the largest group of several cells holds (a single cell is never split)."""
    return max((sum(elements[i] for i in g) * _BYTES_PER_ELEMENT for g in split if len(g) > 1),
               default=0)  # fmt: skip


def _balanced(items: list[tuple[int, int]], n_groups: int) -> list[list[int]]:
    """``n_groups`` groups of the items' indices with near-equal sums (largest first, each
    into the lightest group so far); each group's indices in their original order."""
    bins: list[tuple[int, list[int]]] = [(0, []) for _ in range(n_groups)]
    for size, i in sorted(items, key=lambda t: (-t[0], t[1])):
        k = min(range(n_groups), key=lambda g: bins[g][0])
        bins[k] = (bins[k][0] + size, [*bins[k][1], i])
    return [sorted(members) for _, members in bins if members]
