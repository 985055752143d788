"""Paired bootstrap over test patients × seeds: intervals, tiers and rank probabilities that
account for the test set being a sample (docs/protocol.md section 9, Uncertainty).

Each replicate ``b`` resamples every dataset's test patients with replacement
(:func:`crsbench.stats.resample.row_weights`, a pure function of (dataset, b), hence the same
patients for every encoder: *paired*) and, crossed with that, the seeds (the same seeds for
every encoder and cell). Per cell, every axis is recomputed on the resampled test rows: D and
C on the clean test set, retention at each label fraction, each robustness condition on the
same resampled images, the shift drop on resampled target patients. Full-label predictions that
do not vary over seeds are evaluated once. The per-replicate axes are scored with the fixed
anchors exactly as the point estimate is, and summarised as the seed-only bootstrap is
(:func:`crsbench.stats.bootstrap.paired_seed_bootstrap`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from crsbench.core.errors import DataError
from crsbench.scoring.anchors import AXES, Anchors, load_anchors
from crsbench.stats.bootstrap import BootstrapResult, _summarise, axes_cube, replicate_scores
from crsbench.stats.resample import (
    DEFAULT_REPLICATES,
    SEED_STREAM,
    replicate_ids,
    resample_counts_for,
    row_weights,
)
from crsbench.stats.weighted_metrics import weighted_ece, weighted_macro_auroc

#: How the report names the two interval methods.
TEST_PATIENTS_X_SEEDS = "test patients × seeds"
SEED_ONLY = "seed-only"
INTERVAL_METHODS: dict[str, str] = {"test-patients": TEST_PATIENTS_X_SEEDS, "seed-only": SEED_ONLY}


@dataclass(frozen=True)
class EvalSplit:
    """The rows one prediction is evaluated on: whose patients, which patient each row is,
    and the targets (class indices, or an ``(n, L)`` 0/1/NaN matrix)."""

    dataset: str
    groups: np.ndarray
    y: np.ndarray

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


def _per_seed(prob: np.ndarray, n_seeds: int, fn) -> np.ndarray:
    """``(B, S)`` values of ``fn(prob_s)``; a seed-independent ``(n, K)`` array is evaluated once."""
    if prob.ndim == 2:
        return np.repeat(fn(prob)[:, None], n_seeds, axis=1)
    if prob.shape[0] != n_seeds:
        raise DataError(f"per-seed probabilities must have {n_seeds} seeds. Got {prob.shape[0]}.")
    return np.stack([fn(p) for p in prob], axis=1)


def _weights(split: EvalSplit, replicates: Sequence[int] | np.ndarray | None, seed: int):
    if replicates is None:
        return np.ones((1, len(split.groups)))
    return row_weights(split.dataset, split.groups, replicates, seed).astype(float)


def cell_replicate_axes(
    cell: CellPredictions, replicates: Sequence[int] | np.ndarray | None, seed: int = 0
) -> np.ndarray:
    """The four axes of one cell in each replicate and seed: shape ``(B, S, 4)``.

    Rows of ``replicates`` are bootstrap replicate numbers; the weights of the test rows come
    from :func:`crsbench.stats.resample.row_weights`, so another process computing another
    encoder's cell with the same numbers resamples the same patients. ``None`` weighs every
    row once (the point estimate, shape ``(1, S, 4)``).
    """
    n_s = len(cell.seeds)
    w = _weights(cell.test, replicates, seed)
    y, task = cell.test.y, cell.task

    def auc(p: np.ndarray, split_y=y, weights=w) -> np.ndarray:
        return weighted_macro_auroc(split_y, p, task, weights)

    d = _per_seed(cell.clean, n_s, auc)
    c = _per_seed(cell.clean, n_s, lambda p: weighted_ece(y, p, task, w))
    if cell.fractions:
        ratios = [_per_seed(p, n_s, auc) / d for f, p in sorted(cell.fractions.items()) if f < 1]
        ret = np.mean(ratios, axis=0)
    else:
        ret = np.full_like(d, np.nan)
    drops = [d - _per_seed(p, n_s, auc) for _, p in sorted(cell.conditions.items())]
    if cell.shift is not None:
        split, p = cell.shift
        wt = _weights(split, replicates, seed)
        drops.append(d - _per_seed(p, n_s, lambda q: weighted_macro_auroc(split.y, q, task, wt)))
    if drops:
        stack = np.stack(drops, axis=-1)
        r = 0.5 * stack.mean(axis=-1) + 0.5 * stack.max(axis=-1)
    else:
        r = np.full_like(d, np.nan)
    return np.stack([d, c, ret, r], axis=-1)


def seed_resampled_axes(per_seed: np.ndarray, seed_counts: np.ndarray) -> np.ndarray:
    """Mean over the resampled seeds: ``(B, S, 4)`` axes and ``(B, S)`` counts → ``(B, 4)``."""
    w = seed_counts.astype(float)
    return np.einsum("bsk,bs->bk", per_seed, w) / w.sum(axis=1)[:, None]


def _scores(
    cells: Sequence[CellPredictions], raw: list[np.ndarray], anchors: Anchors
) -> tuple[np.ndarray, list[str]]:
    """Aggregate CRS per encoder of each replicate, ``(B, E)``, scored as the point estimate."""
    n_b = raw[0].shape[0]
    frame = pd.DataFrame(
        {
            "encoder": np.repeat([c.encoder for c in cells], n_b),
            "dataset": np.repeat([c.dataset for c in cells], n_b),
            "seed": np.tile(np.arange(n_b), len(cells)),
        }
    )
    frame[list(AXES)] = np.concatenate(raw, axis=0)
    cube = axes_cube(frame)
    return replicate_scores(cube, np.eye(n_b, dtype=int), anchors), cube.encoders


def _check_cells(cells: Sequence[CellPredictions]) -> None:
    if not cells:
        raise DataError("the test-set bootstrap needs at least one cell of predictions.")
    seeds = {c.seeds for c in cells}
    if len(seeds) > 1:
        raise DataError(f"every cell must have the same seeds. Got {sorted(seeds)}.")
    keys = [(c.encoder, c.dataset) for c in cells]
    if len(set(keys)) != len(keys):
        raise DataError("each (encoder, dataset) cell may appear once.")


def patient_seed_bootstrap(
    cells: Sequence[CellPredictions],
    anchors: str | Anchors | None = None,
    n_replicates: int = DEFAULT_REPLICATES,
    seed: int = 0,
    top_k: int = 3,
    level: float = 0.95,
    chunk: int = 250,
) -> BootstrapResult:
    """Paired bootstrap over test patients × seeds of the aggregate-CRS ranking.

    Parameters
    ----------
    cells : sequence of CellPredictions
        One per (encoder, dataset) of the grid, all with the same seeds.
    anchors : str, Anchors or None
        Fixed anchors (default: the shipped version).
    n_replicates : int
        Replicates (default 2,000; 10,000 for publication figures).
    seed : int
        The bootstrap's seed; replicate ``b`` is the same draw in every cell.
    top_k, level : int, float
        ``p_top3`` counts ranks ``<= top_k``; the percentile intervals' level.
    chunk : int
        Replicates evaluated at once (memory ~ chunk × the largest test split).

    Returns
    -------
    BootstrapResult
        As :func:`crsbench.stats.paired_seed_bootstrap`; ``ranks`` also has ``interval``
        (the method's name) and ``axes`` holds the per-replicate axes.
    """
    _check_cells(cells)
    anc = load_anchors(anchors)
    n_s = len(cells[0].seeds)
    ids = replicate_ids(n_replicates)
    reps = []
    for start in range(0, n_replicates, chunk):
        block = ids[start : start + chunk]
        sc = resample_counts_for(SEED_STREAM, n_s, block, seed)
        raw = [seed_resampled_axes(cell_replicate_axes(c, block, seed), sc) for c in cells]
        scores, encoders = _scores(cells, raw, anc)
        reps.append(scores)
    point_raw = [_point_axes(c) for c in cells]
    point, encoders = _scores(cells, point_raw, anc)
    result = _summarise(encoders, point[0], np.concatenate(reps), top_k, level)
    result.ranks["interval"] = TEST_PATIENTS_X_SEEDS
    return result


def _point_axes(cell: CellPredictions) -> np.ndarray:
    """The cell's seed-mean axes on the test set as drawn (all weights 1): ``(1, 4)``."""
    axes = cell_replicate_axes(cell, None)
    return seed_resampled_axes(axes, np.ones((1, len(cell.seeds)), dtype=int))
