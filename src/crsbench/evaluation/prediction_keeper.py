"""Collecting a cell's per-sample predictions beside its run rows (orchestration side).

A cell's main-protocol rows (frozen, logistic, last layer, no recalibration: the clean test
set at every label fraction and seed, every perturbed condition and shift target at full
labels) carry their probabilities under :data:`PREDICTIONS_KEY`; the driver pops them before
the rows become records and writes them with the records
(:func:`crsbench.store.predictions.prediction_batch`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from crsbench.store.prediction_layout import EVAL_SPLIT, SHIFT_SPLIT, VAL_SPLIT
from crsbench.store.predictions import SplitRows

#: Key of a run row's predictions: ``{split: (SplitRows, probabilities)}``.
PREDICTIONS_KEY = "_predictions"


def attach(row: dict[str, Any], split: str, rows: SplitRows | None, prob: np.ndarray) -> None:
    """Keep ``prob`` (scored on ``rows``) with a run row; nothing when ``rows`` is unknown."""
    if rows is None:
        return
    row.setdefault(PREDICTIONS_KEY, {})[split] = (rows, prob)


def as_float64(prob: Any) -> np.ndarray:
    """Probabilities as scored, computed once and shared by the rows that reuse them."""
    return np.ascontiguousarray(np.asarray(prob), dtype=np.float64)


def pop_predictions(rows: Sequence[dict[str, Any]]) -> list[Mapping[str, tuple] | None]:
    """Remove and return each row's predictions (aligned with ``rows``; None when it has none)."""
    return [row.pop(PREDICTIONS_KEY, None) for row in rows]


class PredictionKeeper:
    """Collects a cell's main-protocol predictions (float64 as scored), once per fitted model and rows.

    ``splits`` maps ``"test"``, ``"val"`` and ``"shift"`` to the cell's :class:`SplitRows`
    (a missing or None entry keeps nothing for that split).
    """

    def __init__(self, splits: Mapping[str, SplitRows | None]) -> None:
        self.splits = dict(splits)
        self.probs: dict[Any, np.ndarray] = {}

    def keep(self, row: dict[str, Any], split: str, key: Any, prob: Any, compute: Any) -> None:
        """Attach the prediction of ``row`` on ``split``; ``prob`` is the probabilities when
        the scorer just computed them (None when it reused a memoised score), ``compute``
        computes them otherwise."""
        rows = self.splits.get(split)
        if rows is None:
            return
        name = EVAL_SPLIT if split.startswith(SHIFT_SPLIT) else split  # a target's test rows
        if key is None or key not in self.probs:
            value = as_float64(prob if prob is not None else compute())
            if key is None:
                attach(row, name, rows, value)
                return
            self.probs[key] = value
        attach(row, name, rows, self.probs[key])


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
