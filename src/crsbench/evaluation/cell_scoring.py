"""Scoring of one prediction into a run result (metric values and typed details), with reuse of
the scores of shared models."""

from __future__ import annotations

import hashlib
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from crsbench.core.shift_labels import shift_label_details
from crsbench.evaluation.identity import RunIdentity
from crsbench.metrics import (
    brier_score,
    expected_calibration_error,
    macro_auroc,
    negative_log_likelihood,
    sensitivity_at_specificity,
)
from crsbench.protocol import ECE_BINS
from crsbench.store.details import (
    JsonObject,
    ReliabilityBins,
    RunDetails,
    ScoreDetails,
    ShiftDetails,
)
from crsbench.store.reliability import reliability_bins
from crsbench.store.run_result import RunResult

#: A metric's score and details as :func:`score` returns them.
Scores = dict[str, Any]
#: What a memoised score is found under: the model's fingerprint and the rows it scored.
MemoKey = tuple[object, ...]
#: The details an evaluation adds to its score's (or a callable computing them).
Extra = RunDetails | Callable[[], RunDetails]

T = TypeVar("T")


def targets(labels: np.ndarray, task: str) -> np.ndarray:
    """Class indices (multiclass, from one-hot rows) or the 0/1/NaN matrix (multilabel)."""
    if task == "multiclass":
        return np.argmax(np.nan_to_num(labels, nan=-1.0), axis=1).astype(np.int64)
    return np.asarray(labels, dtype=np.float64)


@dataclass(frozen=True)
class Measured:
    """Every stored metric of one prediction (NaN where undefined) and what scoring it
    records in ``details``."""

    metrics: Mapping[str, float]
    details: ScoreDetails


def measure(y_true: np.ndarray, prob: np.ndarray, task: str) -> Measured:
    """Every stored metric of one prediction, plus which labels were excluded and why."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        det = macro_auroc(y_true, prob, task, return_details=True)
        metrics = {
            "auroc": float(det.value),
            "ece": float(expected_calibration_error(y_true, prob, task, n_bins=ECE_BINS)),
            "brier": float(brier_score(y_true, prob, task)),
            "nll": float(negative_log_likelihood(y_true, prob, task)),
            "sens_at_spec90": float(sensitivity_at_specificity(y_true, prob, task, 0.90)),
            "sens_at_spec95": float(sensitivity_at_specificity(y_true, prob, task, 0.95)),
        }
    details = ScoreDetails(
        n_eval=int(len(prob)),
        excluded={str(k): v for k, v in det.excluded.items()},
        n_pos=tuple(int(x) for x in det.n_pos),
        suspicious=tuple(det.suspicious or ()),
        warnings=tuple(sorted({str(w.message)[:200] for w in caught})),
    )
    return Measured(metrics, details)


def score(y_true: np.ndarray, prob: np.ndarray, task: str) -> Scores:
    """:func:`measure` as one mapping: the metric values and ``details`` (its JSON object)."""
    got = measure(y_true, prob, task)
    return {**got.metrics, "details": got.details.as_json()}


@dataclass(frozen=True)
class Evaluation:
    """One prediction to score into a run result.

    ``prob`` computes the probabilities and ``extra`` (the details added to the score's) may
    be a callable too: both are called only when the prediction is scored, not when a
    memoised score under ``key`` (the same model on the same rows) is reused. ``bins`` adds
    the reliability diagram's bins to the details. ``t0`` is when the work for the run began.
    """

    ident: RunIdentity
    y: np.ndarray
    prob: Callable[[], np.ndarray]
    extra: Extra
    t0: float
    key: MemoKey | None = None
    bins: bool = False


@dataclass(frozen=True)
class Scored:
    """A run result and the probabilities it was scored from (None when the score was
    reused)."""

    result: RunResult
    prob: np.ndarray | None


@dataclass
class RowScorer:
    """Scores evaluations of one task into run results, reusing the scores of shared models."""

    task: str
    memo: dict[MemoKey, tuple[Mapping[str, float], RunDetails]] = field(default_factory=dict)

    def __call__(self, ev: Evaluation) -> Scored:
        """The result of ``ev`` (with the wall time since ``ev.t0``) and its probabilities.

        A reused score keeps the details of the evaluation that computed it."""
        p = None
        if ev.key is not None and ev.key in self.memo:
            metrics, details = self.memo[ev.key]
        else:
            p = ev.prob()
            got = measure(ev.y, p, self.task)
            metrics = got.metrics
            details = RunDetails(score=got.details).merged(
                ev.extra() if callable(ev.extra) else ev.extra
            )
            if ev.bins:
                bins = ReliabilityBins.from_json(reliability_bins(ev.y, p, self.task))
                details = replace(details, reliability=bins)
            if ev.key is not None:
                self.memo[ev.key] = (metrics, details)
        wall = time.perf_counter() - ev.t0
        return Scored(RunResult(ev.ident, dict(metrics), details, wall), p)


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

    @property
    def compared(self) -> np.ndarray | None: ...

    @property
    def label_names(self) -> tuple[str, ...]: ...


def shift_reference(
    shift: ComparedShift, y_test: np.ndarray, clean_prob: Callable[[], np.ndarray] | None
) -> JsonObject | None:
    """``details["shift_labels"]`` of a shift whose compared labels leave out a source label:
    the model's clean macro-AUROC and ECE on the source's test rows over the compared labels
    only (:mod:`crsbench.core.shift_labels`); ``None`` when every source label is compared.

    ``shift`` is a :class:`~crsbench.evaluation.cell.ShiftData`-like object (``compared``, and
    ``label_names`` in its details' order); ``clean_prob`` gives the test probabilities.
    """
    mask = shift.compared
    if mask is None:
        return None
    mask = np.asarray(mask, dtype=bool)
    if clean_prob is None:  # no prediction (an undefined row): the labels, no reference
        why = "the row's metrics are undefined"
        return shift_label_details(shift.label_names, mask, float("nan"), why)
    prob = np.asarray(clean_prob())
    y = np.asarray(y_test)[:, mask]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = float(macro_auroc(y, prob[:, mask], "multilabel"))
        ece = float(expected_calibration_error(y, prob[:, mask], "multilabel"))
    return shift_label_details(shift.label_names, mask, value, source_clean_ece=ece)


class TargetShift(ComparedShift, Protocol):
    """A shift target as :func:`shift_details` reads it: also the details its rows carry."""

    @property
    def details(self) -> ShiftDetails: ...


def shift_details(
    shift: TargetShift, y_test: np.ndarray, clean_prob: Callable[[], np.ndarray] | None
) -> RunDetails:
    """The details a row scored on shift target ``shift`` adds: its ``shift_rows`` and
    revision, and :func:`shift_reference`."""
    ref = shift_reference(shift, y_test, clean_prob)
    return RunDetails(shift=replace(shift.details, shift_labels=ref))
