"""One cell's axes in each bootstrap replicate and seed: the test-set bootstrap's per-cell work.

:func:`cell_replicate_axes` recomputes the four axes (and the verdict's extras) of one cell on
resampled test rows; :func:`cell_replicates` is a worker's task in
:func:`crsbench.stats.patient_bootstrap.patient_seed_bootstrap`: a cell's replicates, a chunk
at a time, with the shrunk-world ECE for the ECE interval. Each chunk draws the resample
counts of a split once and computes the plug-in and the shrunk ECE from the same matrix
products (:func:`crsbench.stats.weighted_metrics.weighted_ece_and_shrunk`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from crsbench.protocol import JPEG
from crsbench.stats.cell_predictions import CellPredictions
from crsbench.stats.replicate_auroc import ColumnOrders
from crsbench.stats.replicate_values import (
    JPEG_DROP,
    add_r_drops,
    add_shift_calibration,
    per_seed_values,
    replicate_weights,
)
from crsbench.stats.weighted_metrics import (
    weighted_ece,
    weighted_ece_and_shrunk,
    weighted_macro_auroc,
    weighted_shrunk_ece,
)

#: Replicates evaluated at once (memory ~ chunk × the patients of the largest test split;
#: each score column is sorted once per chunk).
DEFAULT_CHUNK = 2_000


def cell_replicate_axes(
    cell: CellPredictions,
    replicates: Sequence[int] | np.ndarray | None,
    seed: int = 0,
    extras: dict[str, np.ndarray] | None = None,
) -> np.ndarray:
    """The four axes of one cell in each replicate and seed: shape ``(B, S, 4)``.

    Rows of ``replicates`` are bootstrap replicate numbers; the weights of the test rows come
    from :func:`crsbench.stats.resample.row_weights`, so another process computing another
    encoder's cell with the same numbers resamples the same patients. ``None`` weighs every
    row once (the point estimate, shape ``(1, S, 4)``). A given ``extras`` dict receives the
    verdict's other ``(B, S)`` values on the same resamples: :data:`JPEG_DROP` (the mean AUROC
    drop over the JPEG severities) and, per shift target, :data:`SHIFT_ECE_INCREASE` + target
    (its ECE minus the clean ECE; the targets outside R too).
    """
    return _cell_axes(cell, replicates, seed, extras, shrunk=False)[0]


def _cell_axes(
    cell: CellPredictions,
    replicates: Sequence[int] | np.ndarray | None,
    seed: int,
    extras: dict[str, np.ndarray] | None,
    shrunk: bool,
    orders: ColumnOrders | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """:func:`cell_replicate_axes` and, when ``shrunk``, the ``(B, S)`` shrunk-world ECE of
    :func:`cell_shrunk_ece` from the same weights and matrix products (else ``None``);
    ``orders`` keeps the sorted score columns for the cell's next chunk."""
    cell = cell.widened()
    n_s = len(cell.seeds)
    w = replicate_weights(cell.test, replicates, seed)
    y, task = cell.test.y, cell.task

    def auc(p: np.ndarray, split_y=y, weights=w) -> np.ndarray:
        return weighted_macro_auroc(split_y, p, task, weights, orders)

    d = per_seed_values(cell.clean, n_s, auc)
    if shrunk:
        both = per_seed_values(cell.clean, n_s, lambda p: weighted_ece_and_shrunk(y, p, task, w))
        c, c_shrunk = both[..., 0], both[..., 1]
    else:
        c, c_shrunk = per_seed_values(cell.clean, n_s, lambda p: weighted_ece(y, p, task, w)), None
    if cell.fractions:
        ratios = [
            per_seed_values(p, n_s, auc) / d for f, p in sorted(cell.fractions.items()) if f < 1
        ]
        ret = np.mean(ratios, axis=0)
    else:
        ret = np.full_like(d, np.nan)
    conditions = sorted(cell.conditions.items())
    drops = [d - per_seed_values(p, n_s, auc) for _, p in conditions]
    shifts = [(split, p, replicate_weights(split, replicates, seed)) for split, p in cell.shifts]
    for split, p, wt in shifts:
        drops.append(d - per_seed_values(p, n_s, lambda q, s=split, w=wt: auc(q, s.y, w)))
    if extras is not None:  # the targets outside R too, for their ECE increase only
        more = [(s, p, replicate_weights(s, replicates, seed)) for s, p in cell.extra_shifts]
        add_shift_calibration(cell, [*shifts, *more], w, c, extras)
    jpeg = [drop for (key, _), drop in zip(conditions, drops, strict=False) if key[0] == JPEG]
    if extras is not None and jpeg:
        extras[JPEG_DROP] = np.mean(jpeg, axis=0)
    if extras is not None:
        add_r_drops(drops, extras, n_shift=len(shifts))
    if drops:
        stack = np.stack(drops, axis=-1)
        r = 0.5 * stack.mean(axis=-1) + 0.5 * stack.max(axis=-1)
    else:
        r = np.full_like(d, np.nan)
    return np.stack([d, c, ret, r], axis=-1), c_shrunk


def seed_resampled_axes(per_seed: np.ndarray, seed_counts: np.ndarray) -> np.ndarray:
    """Mean over the resampled seeds: ``(B, S, 4)`` axes and ``(B, S)`` counts → ``(B, 4)``."""
    w = seed_counts.astype(float)
    return np.einsum("bsk,bs->bk", per_seed, w) / w.sum(axis=1)[:, None]


def cell_shrunk_ece(
    cell: CellPredictions, replicates: Sequence[int] | np.ndarray | None, seed: int = 0
) -> np.ndarray:
    """``(B, S)`` ECE of the cell's clean predictions in the shrunk bootstrap world
    (:func:`crsbench.stats.weighted_metrics.weighted_shrunk_ece`), same replicates as
    :func:`cell_replicate_axes`."""
    cell = cell.widened()
    w = replicate_weights(cell.test, replicates, seed)
    y, task = cell.test.y, cell.task
    return per_seed_values(
        cell.clean, len(cell.seeds), lambda p: weighted_shrunk_ece(y, p, task, w)
    )


def seed_mean(per_seed: np.ndarray, seed_counts: np.ndarray) -> np.ndarray:
    """``(B, S)`` values averaged over the resampled seeds ``(B, S)`` → ``(B,)``."""
    w = seed_counts.astype(float)
    return (per_seed * w).sum(axis=1) / w.sum(axis=1)


def cell_replicates(
    cell: CellPredictions,
    replicates: np.ndarray,
    seed_counts: np.ndarray,
    seed: int = 0,
    chunk: int = DEFAULT_CHUNK,
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """One cell's share of the bootstrap (a worker's task): ``(B, 4)`` seed-mean axes,
    ``(B,)`` seed-mean shrunk-world ECE and the ``(B,)`` seed-mean extras of
    :func:`cell_replicate_axes` of ``replicates``, evaluated ``chunk`` at a time, the seeds
    resampled by ``seed_counts`` (``(B, S)``, the same for every cell). The same numbers as
    :func:`cell_replicate_axes` and :func:`cell_shrunk_ece` of each chunk, from one pass."""
    cell = cell.widened()  # once for every chunk
    orders = ColumnOrders()  # every column sorted once for every chunk
    axes, shrunk, extras = [], [], []
    for start in range(0, len(replicates), chunk):
        block, sc = replicates[start : start + chunk], seed_counts[start : start + chunk]
        more: dict[str, np.ndarray] = {}
        per_seed, per_seed_shrunk = _cell_axes(cell, block, seed, more, True, orders)
        axes.append(seed_resampled_axes(per_seed, sc))
        shrunk.append(seed_mean(per_seed_shrunk, sc))
        extras.append({k: seed_mean(v, sc) for k, v in more.items()})
    joined = {k: np.concatenate([e[k] for e in extras]) for k in extras[0]} if extras else {}
    return np.concatenate(axes), np.concatenate(shrunk), joined


def cell_point_values(cell: CellPredictions) -> tuple[np.ndarray, dict[str, float]]:
    """The cell's seed-mean axes ``(1, 4)`` and extras on the test set as drawn (all weights
    1), from one evaluation."""
    more: dict[str, np.ndarray] = {}
    axes = cell_replicate_axes(cell, None, extras=more)
    ones = np.ones((1, len(cell.seeds)), dtype=int)
    return seed_resampled_axes(axes, ones), {k: float(v[0].mean()) for k, v in more.items()}


@dataclass(frozen=True)
class CellShare:
    """One cell's share of the test-set bootstrap (what a worker returns): the replicates of
    :func:`cell_replicates` and the point values of the test set as drawn.

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


def cell_share(
    cell: CellPredictions,
    replicates: np.ndarray,
    seed_counts: np.ndarray,
    seed: int = 0,
    chunk: int = DEFAULT_CHUNK,
) -> CellShare:
    """:func:`cell_replicates` and the cell's point values, computed where the cell is (a
    worker process), so that no point estimate waits for the pool to finish."""
    axes, shrunk, extras = cell_replicates(cell, replicates, seed_counts, seed, chunk)
    point_axes, point_extras = cell_point_values(cell)
    ones = np.ones((1, len(cell.seeds)), dtype=int)
    point_shrunk = float(seed_mean(cell_shrunk_ece(cell, None), ones)[0])
    return CellShare(axes, shrunk, extras, point_axes, point_extras, point_shrunk)
