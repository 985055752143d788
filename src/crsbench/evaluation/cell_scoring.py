"""Scoring of one prediction into a run row's metric values, with reuse of shared models."""

from __future__ import annotations

import copy
import hashlib
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from crsbench.core.shift_labels import SHIFT_LABELS, shift_label_details
from crsbench.evaluation.identity import RunIdentity
from crsbench.metrics import (
    brier_score,
    expected_calibration_error,
    macro_auroc,
    negative_log_likelihood,
    sensitivity_at_specificity,
)
from crsbench.protocol import ECE_BINS
from crsbench.store.reliability import reliability_bins

#: One run row: the identity columns, the metric values, ``details`` and ``wall_time_s``
#: (plus the predictions a keeper attaches); :func:`crsbench.runs.rows.to_records` makes it a
#: validated record.
RunRow = dict[str, Any]
#: A metric's score and details as :func:`score` returns them.
Scores = dict[str, Any]
#: What a memoised score is found under: the model's fingerprint and the rows it scored.
MemoKey = tuple[object, ...]
Details = Mapping[str, Any]

T = TypeVar("T")


def targets(labels: np.ndarray, task: str) -> np.ndarray:
    """Class indices (multiclass, from one-hot rows) or the 0/1/NaN matrix (multilabel)."""
    if task == "multiclass":
        return np.argmax(np.nan_to_num(labels, nan=-1.0), axis=1).astype(np.int64)
    return np.asarray(labels, dtype=np.float64)


def score(y_true: np.ndarray, prob: np.ndarray, task: str) -> Scores:
    """Every stored metric of one prediction, plus which labels were excluded and why."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        det = macro_auroc(y_true, prob, task, return_details=True)
        out: dict[str, Any] = {
            "auroc": float(det.value),
            "ece": float(expected_calibration_error(y_true, prob, task, n_bins=ECE_BINS)),
            "brier": float(brier_score(y_true, prob, task)),
            "nll": float(negative_log_likelihood(y_true, prob, task)),
            "sens_at_spec90": float(sensitivity_at_specificity(y_true, prob, task, 0.90)),
            "sens_at_spec95": float(sensitivity_at_specificity(y_true, prob, task, 0.95)),
        }
    details: dict[str, Any] = {
        "n_eval": int(len(prob)),
        "excluded": {str(k): v for k, v in det.excluded.items()},
        "n_pos": [int(x) for x in det.n_pos],
    }
    if det.suspicious:
        details["suspicious_auroc_0.5"] = list(det.suspicious)
    if caught:
        details["warnings"] = sorted({str(w.message)[:200] for w in caught})
    out["details"] = details
    return out


@dataclass(frozen=True)
class Evaluation:
    """One prediction to score into a run row.

    ``prob`` computes the probabilities and ``extra`` (the details added to the row) may be a
    callable too: both are called only when the prediction is scored, not when a memoised
    score under ``key`` (the same model on the same rows) is reused. ``bins`` adds the
    reliability diagram's bins to the details. ``t0`` is when the work for the row began.
    """

    ident: RunIdentity
    y: np.ndarray
    prob: Callable[[], np.ndarray]
    extra: Details | Callable[[], Details]
    t0: float
    key: MemoKey | None = None
    bins: bool = False


@dataclass(frozen=True)
class Scored:
    """A run row and the probabilities it was scored from (None when the score was reused)."""

    row: RunRow
    prob: np.ndarray | None


@dataclass
class RowScorer:
    """Scores evaluations of one task into run rows, reusing the scores of shared models."""

    task: str
    memo: dict[MemoKey, Scores] = field(default_factory=dict)

    def __call__(self, ev: Evaluation) -> Scored:
        """The row of ``ev`` (with the wall time since ``ev.t0``) and its probabilities."""
        p = None
        if ev.key is not None and ev.key in self.memo:
            metrics = copy.deepcopy(self.memo[ev.key])
        else:
            p = ev.prob()
            metrics = score(ev.y, p, self.task)
            metrics["details"].update(ev.extra() if callable(ev.extra) else ev.extra)
            if ev.bins:
                metrics["details"]["reliability"] = reliability_bins(ev.y, p, self.task)
            if ev.key is not None:
                self.memo[ev.key] = copy.deepcopy(metrics)
        row = {**ev.ident.as_dict(), **metrics, "wall_time_s": time.perf_counter() - ev.t0}
        return Scored(row, p)


def model_key(*parts: Any) -> str:
    """Fingerprint of a fitted model from its parameters or its training rows."""
    h = hashlib.sha256()
    for p in parts:
        h.update(
            np.ascontiguousarray(p).tobytes() if isinstance(p, np.ndarray) else repr(p).encode()
        )
    return h.hexdigest()


class Lazy(Generic[T]):
    """A value computed on first call and kept (the clean test prediction that every shift
    target of a model compares with)."""

    def __init__(self, fn: Callable[[], T]) -> None:
        self._fn = fn
        self._value: T | None = None
        self._done = False

    def __call__(self) -> T:
        if not self._done:
            self._value, self._done = self._fn(), True
        return self._value  # type: ignore[return-value]


class ComparedShift(Protocol):
    """What :func:`shift_reference` reads of a shift target: the compared-label mask (None:
    every source label) and the source's label names."""

    compared: np.ndarray | None
    label_names: tuple[str, ...]


def shift_reference(
    shift: ComparedShift, y_test: np.ndarray, clean_prob: Callable[[], np.ndarray] | None
) -> dict[str, Any]:
    """``{"shift_labels": ...}`` for a shift whose compared labels leave out a source label:
    the model's clean macro-AUROC and ECE on the source's test rows over the compared labels
    only (:mod:`crsbench.core.shift_labels`); ``{}`` when every source label is compared.

    ``shift`` is a :class:`~crsbench.evaluation.cell.ShiftData`-like object (``compared``, and
    ``label_names`` in its details' order); ``clean_prob`` gives the test probabilities.
    """
    mask = shift.compared
    if mask is None:
        return {}
    mask = np.asarray(mask, dtype=bool)
    if clean_prob is None:  # no prediction (an undefined row): the labels, no reference
        why = "the row's metrics are undefined"
        return {SHIFT_LABELS: shift_label_details(shift.label_names, mask, float("nan"), why)}
    prob = np.asarray(clean_prob())
    y = np.asarray(y_test)[:, mask]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = float(macro_auroc(y, prob[:, mask], "multilabel"))
        ece = float(expected_calibration_error(y, prob[:, mask], "multilabel"))
    return {SHIFT_LABELS: shift_label_details(shift.label_names, mask, value,
                                              source_clean_ece=ece)}  # fmt: skip
