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

import numpy as np

from crsbench.protocol import JPEG
from crsbench.stats.cell_predictions import CellPredictions
from crsbench.stats.replicate_auroc import ColumnOrders
from crsbench.stats.replicate_values import (
    JPEG_DROP,
    ChunkWeights,
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
    weights: ChunkWeights | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """:func:`cell_replicate_axes` and, when ``shrunk``, the ``(B, S)`` shrunk-world ECE of
    :func:`cell_shrunk_ece` from the same weights and matrix products (else ``None``);
    ``orders`` keeps the sorted score columns for the cell's next chunk; ``weights`` holds the
    splits' weights of ``replicates`` shared with other cells (drawn here when ``None``)."""
    cell = cell.widened()
    n_s = len(cell.seeds)
    weights = ChunkWeights(replicates, seed) if weights is None or replicates is None else weights
    w = weights.of(cell.test)
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
    shifts = [(split, p, weights.of(split)) for split, p in cell.shifts]
    for split, p, wt in shifts:
        drops.append(d - per_seed_values(p, n_s, lambda q, s=split, w=wt: auc(q, s.y, w)))
    if extras is not None:  # the targets outside R too, for their ECE increase only
        more = [(s, p, weights.of(s)) for s, p in cell.extra_shifts]
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
    """One cell's share of the bootstrap: ``(B, 4)`` seed-mean axes, ``(B,)`` seed-mean
    shrunk-world ECE and the ``(B,)`` seed-mean extras of :func:`cell_replicate_axes` of
    ``replicates``, evaluated ``chunk`` at a time, the seeds resampled by ``seed_counts``
    (``(B, S)``, the same for every cell). The same numbers as :func:`cell_replicate_axes`
    and :func:`cell_shrunk_ece` of each chunk, from one pass."""
    return group_replicates([cell], replicates, seed_counts, seed, chunk)[0]


def group_replicates(
    cells: Sequence[CellPredictions],
    replicates: np.ndarray,
    seed_counts: np.ndarray,
    seed: int = 0,
    chunk: int = DEFAULT_CHUNK,
) -> list[tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]]:
    """:func:`cell_replicates` of several cells, chunk by chunk: each chunk's weights of a
    split are drawn once and read by every cell on that split (the cells of one dataset),
    and each cell's score columns are sorted once for every chunk (held meanwhile: about 5
    bytes per row, label and prediction of every cell)."""
    cells = [c.widened() for c in cells]  # once for every chunk
    orders = [ColumnOrders() for _ in cells]
    parts: list[tuple[list, list, list]] = [([], [], []) for _ in cells]
    for start in range(0, len(replicates), chunk):
        block, sc = replicates[start : start + chunk], seed_counts[start : start + chunk]
        weights = ChunkWeights(block, seed)
        for cell, kept, (axes, shrunk, extras) in zip(cells, orders, parts, strict=True):
            more: dict[str, np.ndarray] = {}
            per_seed, per_seed_shrunk = _cell_axes(cell, block, seed, more, True, kept, weights)
            axes.append(seed_resampled_axes(per_seed, sc))
            shrunk.append(seed_mean(per_seed_shrunk, sc))
            extras.append({k: seed_mean(v, sc) for k, v in more.items()})
    return [_joined(*p) for p in parts]


def _joined(axes: list, shrunk: list, extras: list[dict]):
    """One cell's chunks put together."""
    together = {k: np.concatenate([e[k] for e in extras]) for k in extras[0]} if extras else {}
    return np.concatenate(axes), np.concatenate(shrunk), together


def cell_point_values(cell: CellPredictions) -> tuple[np.ndarray, dict[str, float]]:
    """The cell's seed-mean axes ``(1, 4)`` and extras on the test set as drawn (all weights
    1), from one evaluation."""
    more: dict[str, np.ndarray] = {}
    axes = cell_replicate_axes(cell, None, extras=more)
    ones = np.ones((1, len(cell.seeds)), dtype=int)
    return seed_resampled_axes(axes, ones), {k: float(v[0].mean()) for k, v in more.items()}
