"""Scoring of one prediction into a run row's metric values, with reuse of shared models."""

from __future__ import annotations

import copy
import hashlib
import time
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from crsbench.core.shift_labels import SHIFT_LABELS, shift_label_details
from crsbench.metrics import (
    brier_score,
    expected_calibration_error,
    macro_auroc,
    negative_log_likelihood,
    sensitivity_at_specificity,
)
from crsbench.store.reliability import reliability_bins


def targets(labels: np.ndarray, task: str) -> np.ndarray:
    """Class indices (multiclass, from one-hot rows) or the 0/1/NaN matrix (multilabel)."""
    if task == "multiclass":
        return np.argmax(np.nan_to_num(labels, nan=-1.0), axis=1).astype(np.int64)
    return np.asarray(labels, dtype=np.float64)


def score(y_true: np.ndarray, prob: np.ndarray, task: str) -> dict[str, Any]:
    """Every stored metric of one prediction, plus which labels were excluded and why."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        det = macro_auroc(y_true, prob, task, return_details=True)
        out: dict[str, Any] = {
            "auroc": float(det.value),
            "ece": float(expected_calibration_error(y_true, prob, task, n_bins=15)),
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


def emit(
    rows: list[dict[str, Any]],
    ident: dict[str, Any],
    y: np.ndarray,
    prob: Any,
    task: str,
    extra: Mapping[str, Any] | Callable[[], Mapping[str, Any]],
    t0: float,
    memo: dict[Any, dict[str, Any]] | None = None,
    key: Any = None,
    bins: bool = False,
) -> Any:
    """Score a prediction and append the row; ``prob`` and ``extra`` (the details added to the
    row) may be callables, computed only when the prediction is scored.

    With ``memo`` and ``key``, a prediction already scored under ``key`` (the same model on
    the same rows, e.g. the full-label fit that every seed shares) is reused, not recomputed.
    Returns the probabilities when they were computed here, None when the score was reused.
    """
    p = None
    if memo is not None and key is not None and key in memo:
        metrics = copy.deepcopy(memo[key])
    else:
        p = prob() if callable(prob) else prob
        metrics = score(y, p, task)
        metrics["details"].update(extra() if callable(extra) else extra)
        if bins:
            metrics["details"]["reliability"] = reliability_bins(y, p, task)
        if memo is not None and key is not None:
            memo[key] = copy.deepcopy(metrics)
    rows.append({**ident, **metrics, "wall_time_s": time.perf_counter() - t0})
    return p


def model_key(*parts: Any) -> str:
    """Fingerprint of a fitted model from its parameters or its training rows."""
    h = hashlib.sha256()
    for p in parts:
        h.update(
            np.ascontiguousarray(p).tobytes() if isinstance(p, np.ndarray) else repr(p).encode()
        )
    return h.hexdigest()


class Lazy:
    """A value computed on first call and kept (the clean test prediction that every shift
    target of a model compares with)."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self._fn = fn
        self._value: Any = None
        self._done = False

    def __call__(self) -> Any:
        if not self._done:
            self._value, self._done = self._fn(), True
        return self._value


def shift_reference(shift: Any, y_test: np.ndarray, clean_prob: Callable[[], Any] | None) -> dict:
    """``{"shift_labels": ...}`` for a shift whose compared labels leave out a source label:
    the model's clean macro-AUROC on the source's test rows over the compared labels only
    (:mod:`crsbench.core.shift_labels`); ``{}`` when every source label is compared.

    ``shift`` is a :class:`~crsbench.runs.cell.ShiftData`-like object (``compared``, and
    ``label_names`` in its details' order); ``clean_prob`` gives the test probabilities.
    """
    mask = getattr(shift, "compared", None)
    if mask is None:
        return {}
    mask = np.asarray(mask, dtype=bool)
    if clean_prob is None:  # no prediction (an undefined row): the labels, no reference
        why = "the row's metrics are undefined"
        return {SHIFT_LABELS: shift_label_details(shift.label_names, mask, float("nan"), why)}
    prob = np.asarray(clean_prob())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = float(macro_auroc(np.asarray(y_test)[:, mask], prob[:, mask], "multilabel"))
    return {SHIFT_LABELS: shift_label_details(shift.label_names, mask, value)}
