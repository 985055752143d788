"""Collecting a cell's per-sample predictions beside its run results.

A cell's main-protocol results (frozen, logistic, last layer, no recalibration: the clean test
set at every label fraction and seed, every perturbed condition and shift target at full
labels) carry their probabilities in :attr:`~crsbench.store.run_result.RunResult.predictions`;
the driver writes them with the records (:func:`kept_predictions`,
:func:`crsbench.store.predictions.prediction_batch`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from crsbench.store.prediction_layout import EVAL_SPLIT, SHIFT_SPLIT, VAL_SPLIT
from crsbench.store.predictions import SplitRows
from crsbench.store.run_result import KeptPredictions, RunResult


def as_float64(prob: Any) -> np.ndarray:
    """Probabilities as scored, computed once and shared by the results that reuse them."""
    return np.ascontiguousarray(np.asarray(prob), dtype=np.float64)


def kept_predictions(results: Sequence[RunResult]) -> list[KeptPredictions | None]:
    """Each result's predictions (aligned with ``results``; None when it keeps none)."""
    return [r.predictions or None for r in results]


class PredictionKeeper:
    """Collects a cell's main-protocol predictions (float64 as scored), once per fitted model and rows.

    ``splits`` maps ``"test"``, ``"val"`` and ``"shift"`` to the cell's :class:`SplitRows`
    (a missing or None entry keeps nothing for that split).
    """

    def __init__(self, splits: Mapping[str, SplitRows | None]) -> None:
        self.splits = dict(splits)
        self.probs: dict[Any, np.ndarray] = {}

    def keep(
        self, result: RunResult, split: str, key: Any, prob: Any, compute: Callable[[], Any]
    ) -> RunResult:
        """``result`` keeping its prediction on ``split`` (unchanged when the split's rows
        are unknown); ``prob`` is the probabilities when the scorer just computed them (None
        when it reused a memoised score), ``compute`` computes them otherwise."""
        rows = self.splits.get(split)
        if rows is None:
            return result
        name = EVAL_SPLIT if split.startswith(SHIFT_SPLIT) else split  # a target's test rows
        if key is None or key not in self.probs:
            value = as_float64(prob if prob is not None else compute())
            if key is None:
                return result.with_prediction(name, rows, value)
            self.probs[key] = value
        return result.with_prediction(name, rows, self.probs[key])


def cell_keeper(cell: Any, y: np.ndarray) -> PredictionKeeper:
    """The keeper of a :class:`crsbench.evaluation.cell.CellData` (``y``: its targets); keeps
    nothing when the cell does not know its image ids and groups."""
    if cell.image_ids is None or cell.groups is None:
        return PredictionKeeper({})
    ids, groups = np.asarray(cell.image_ids), np.asarray(cell.groups)
    meta = getattr(cell, "metadata", None) or {}

    def split_rows(name: str, idx: np.ndarray) -> SplitRows:
        m = {k: np.asarray(v)[idx] for k, v in meta.items()}
        return SplitRows(cell.dataset, name, cell.task, ids[idx], groups[idx], y[idx], m)

    splits: dict[str, SplitRows | None] = {
        EVAL_SPLIT: split_rows(EVAL_SPLIT, cell.test),
        VAL_SPLIT: split_rows(VAL_SPLIT, cell.val),
    }
    from crsbench.evaluation.cell_scoring import targets

    for sh in cell.shifts:
        if sh.image_ids is not None and sh.groups is not None:
            splits[shift_split(sh.target)] = SplitRows(
                sh.target, SHIFT_SPLIT, cell.task, np.asarray(sh.image_ids),
                np.asarray(sh.groups), targets(sh.y, cell.task),
                dict(sh.metadata or {}),
            )  # fmt: skip
    return PredictionKeeper(splits)


def shift_split(target: str) -> str:
    """The keeper's name of shift target ``target``'s evaluation rows (one per target)."""
    return f"{SHIFT_SPLIT}:{target}"
