"""Per-seed values of one cell under bootstrap row weights, and the verdict's extra values.

:func:`per_seed_values` evaluates a metric on each seed's predictions (once when they do not
vary over seeds) and :func:`replicate_weights` gives a split's rows their weight in each
replicate (:mod:`crsbench.stats.resample`); the test-patient bootstrap
(:mod:`crsbench.stats.patient_bootstrap`) builds on them.
:func:`add_shift_calibration` adds the verdict's ECE increase on every shift target.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from crsbench.core.errors import DataError
from crsbench.stats.cell_predictions import CellPredictions, EvalSplit
from crsbench.stats.resample import patient_index, resample_counts_for
from crsbench.stats.weighted_metrics import ReplicateWeights, weighted_ece

#: Key of the mean AUROC drop under JPEG among :func:`cell_replicate_axes`' extras.
JPEG_DROP = "jpeg_drop"
#: Prefix of the ECE increase on a shift target (``shift_ece_increase:<target>``).
SHIFT_ECE_INCREASE = "shift_ece_increase:"
#: Prefix of each of R's drops (``r_drop:<i>``: the conditions in sorted order, then the shift
#: targets inside R), read by the interval of R (:mod:`crsbench.stats.robustness_interval`).
R_DROP = "r_drop:"
#: Suffix of a shift target's drop among R's (``r_drop:15:shift``).
R_SHIFT_DROP = ":shift"


def per_seed_values(prob: np.ndarray, n_seeds: int, fn) -> np.ndarray:
    """``(B, S)`` values of ``fn(prob_s)``; a seed-independent ``(n, K)`` array is evaluated once."""
    if prob.ndim == 2:
        return np.repeat(fn(prob)[:, None], n_seeds, axis=1)
    if prob.shape[0] != n_seeds:
        raise DataError(f"per-seed probabilities must have {n_seeds} seeds. Got {prob.shape[0]}.")
    return np.stack([fn(p) for p in prob], axis=1)


def replicate_weights(
    split: EvalSplit, replicates: Sequence[int] | np.ndarray | None, seed: int
) -> ReplicateWeights:
    if replicates is None:
        return ReplicateWeights.of(np.ones((1, len(split.groups)), dtype=np.int32))
    patients, inverse = patient_index(split.groups)
    counts = resample_counts_for(split.dataset, len(patients), replicates, seed, narrow=True)
    return ReplicateWeights.of(counts, inverse)


class ChunkWeights:
    """Each split's :func:`replicate_weights` for one chunk of replicates, drawn once and read
    by every cell evaluated on that chunk (the counts are a pure function of the dataset and
    the replicate: the same for every encoder). A split is found by its dataset and its
    patients (compared on every hit), so two cells' copies of one split share an entry."""

    def __init__(self, replicates: Sequence[int] | np.ndarray | None, seed: int) -> None:
        self.replicates = replicates
        self.seed = seed
        self._found: dict[tuple[str, int], tuple[np.ndarray, ReplicateWeights]] = {}

    def of(self, split: EvalSplit) -> ReplicateWeights:
        """The weights of ``split``'s rows in this chunk."""
        key = (split.dataset, len(split.groups))
        hit = self._found.get(key)
        if hit is not None and (hit[0] is split.groups or np.array_equal(hit[0], split.groups)):
            return hit[1]
        w = replicate_weights(split, self.replicates, self.seed)
        self._found[key] = (split.groups, w)
        return w


def add_shift_calibration(
    cell: CellPredictions,
    targets: Sequence[tuple[EvalSplit, np.ndarray, ReplicateWeights]],
    test_weights: ReplicateWeights,
    clean_ece: np.ndarray,
    extras: dict[str, np.ndarray],
) -> None:
    """``(B, S)`` ECE increase on each shift target (split, probabilities, row weights) into
    ``extras``: its ECE minus the clean ECE (``clean_ece``, on ``test_weights``) over the same
    labels (a target's labels with no value, those it does not provide, are left out of the
    clean side too)."""
    n_s, task = len(cell.seeds), cell.task
    for split, p, wt in targets:
        ece = per_seed_values(p, n_s, lambda q, s=split, w=wt: weighted_ece(s.y, q, task, w))
        absent = ~np.isfinite(split.y).any(axis=0) if task == "multilabel" else np.zeros(1, bool)
        if absent.any():
            y = np.where(absent[None, :], np.nan, cell.test.y)
            ref = per_seed_values(
                cell.clean, n_s, lambda q, y=y: weighted_ece(y, q, task, test_weights)
            )
        else:
            ref = clean_ece
        extras[SHIFT_ECE_INCREASE + split.dataset] = ece - ref


def add_r_drops(
    drops: Sequence[np.ndarray], extras: dict[str, np.ndarray], n_shift: int = 0
) -> None:
    """Each of R's ``(B, S)`` drops into ``extras`` as :data:`R_DROP` + its 2-digit index; the
    last ``n_shift`` (the shift targets') with :data:`R_SHIFT_DROP` after it."""
    for i, drop in enumerate(drops):
        shift = i >= len(drops) - n_shift
        extras[f"{R_DROP}{i:02d}{R_SHIFT_DROP if shift else ''}"] = drop
