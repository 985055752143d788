"""AUROC, ECE (plug-in and debiased) and the robustness drop R of one cell's test rows under
many row weightings at once: the bootstrap's replicates of one subgroup, or every subgroup
under every reassignment of the permutation test (:mod:`crsbench.stats.subgroup_tests`).

Weights are :class:`crsbench.stats.weighted_metrics.ReplicateWeights` over the given rows
(one row of weights per replicate or per (subgroup, reassignment)); a metric's value is its
mean over seeds when the probabilities are per seed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from crsbench.stats.cell_predictions import CellPredictions
from crsbench.stats.weighted_metrics import (
    ReplicateWeights,
    weighted_debiased_ece,
    weighted_ece_and_debiased,
    weighted_macro_auroc,
)

Metric = Callable[[np.ndarray, np.ndarray, str, ReplicateWeights], np.ndarray]


def seed_mean(metric: Metric, y, prob, task, w) -> np.ndarray:
    """The metric for each row of ``w``, averaged over seeds when ``prob`` is ``(S, n, K)``."""
    if prob.ndim == 2:
        return metric(y, prob, task, w)
    return np.mean([metric(y, p, task, w) for p in prob], axis=0)


@dataclass(frozen=True)
class ShiftTerm:
    """One shift target's part of R: the subgroup's AUROC on the target (per weight row)
    where ``own`` (the target records the subgroup with enough patients), else the cell's
    overall drop to the target (``overall``)."""

    target_auc: np.ndarray | float
    own: np.ndarray | bool
    overall: np.ndarray | float


def values_on(
    cell: CellPredictions,
    rows: np.ndarray,
    w: ReplicateWeights,
    shifts: Sequence[ShiftTerm],
    plug_in: bool = True,
) -> dict[str, np.ndarray]:
    """AUROC, ECE, debiased ECE and R (0.5 · mean + 0.5 · max of the drops) of ``rows`` of
    the cell's test split under each row of ``w``.

    Parameters
    ----------
    cell : CellPredictions
        The cell.
    rows : array of int
        Test rows the weights refer to.
    w : ReplicateWeights
        Weights of those rows, one row per evaluation.
    shifts : sequence of ShiftTerm
        The shift targets inside R.
    plug_in : bool
        Whether to compute the plug-in ECE too (the permutation test reads only the
        debiased one).
    """
    y, task = cell.test.y[rows], cell.task
    auc = seed_mean(weighted_macro_auroc, y, cell.clean[..., rows, :], task, w)
    out = {"auroc": auc}
    if plug_in:  # both from one pass: the debiased ECE's sums hold the plug-in's
        both = seed_mean(weighted_ece_and_debiased, y, cell.clean[..., rows, :], task, w)
        out["ece_debiased"], out["ece"] = both[1], both[0]
    else:
        out["ece_debiased"] = seed_mean(weighted_debiased_ece, y, cell.clean[..., rows, :], task, w)
    drops = [auc - seed_mean(weighted_macro_auroc, y, p[..., rows, :], task, w)
             for _, p in sorted(cell.conditions.items())]  # fmt: skip
    drops += [np.where(s.own, auc - s.target_auc, s.overall) for s in shifts]
    if drops:
        stack = np.stack(np.broadcast_arrays(*drops), axis=-1)
        out["robustness_drop"] = 0.5 * stack.mean(axis=-1) + 0.5 * stack.max(axis=-1)
    else:
        out["robustness_drop"] = np.full(len(auc), np.nan)
    return out


def auroc_on(cell: CellPredictions, split, prob, rows: np.ndarray, w) -> np.ndarray:
    """Seed-mean macro AUROC of ``rows`` of ``split`` (probabilities ``prob``) under ``w``."""
    return seed_mean(weighted_macro_auroc, split.y[rows], prob[..., rows, :], cell.task, w)
