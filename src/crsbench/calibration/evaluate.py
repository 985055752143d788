"""Fit a recalibrator on the calibration split and report before/after metrics on test."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit, softmax

from crsbench.calibration.base import CalibratorBase, to_logits
from crsbench.calibration.registry import CALIBRATORS
from crsbench.core.types import check_task
from crsbench.metrics import (
    brier_score,
    expected_calibration_error,
    macro_auroc,
    negative_log_likelihood,
)
from crsbench.probes._validation import check_features


def evaluate_recalibration(
    method: str | CalibratorBase,
    p_calib: np.ndarray,
    y_calib: np.ndarray,
    p_test: np.ndarray,
    y_test: np.ndarray,
    task: str,
    **params: Any,
) -> dict[str, float]:
    """Recalibrate with ``method`` fitted on the calibration split; score test before/after.

    Parameters
    ----------
    method : str or calibrator
        A name in :data:`CALIBRATORS` ("temperature", "vector", "isotonic", "dirichlet") or an
        unfitted calibrator instance.
    p_calib, y_calib : calibration-split probabilities (or logits) and targets.
    p_test, y_test : test-split probabilities (or logits) and targets.
    task : {"multiclass", "multilabel"}
    **params : passed to the calibrator's constructor when ``method`` is a name.

    Returns
    -------
    dict
        ``ece_before``, ``ece_after``, ``ece_reduction`` (absolute), ``ece_relative_reduction``,
        ``auroc_before``, ``auroc_after``, ``auroc_delta``, ``nll_before``, ``nll_after``,
        ``brier_before``, ``brier_after``.
    """
    check_task(task)
    if isinstance(method, str):
        cal = CALIBRATORS.get(method)(task=task, **params)
    else:
        cal = method
    cal.fit(p_calib, y_calib)
    S = check_features(p_test, "p_test").astype(np.float64)
    Z = to_logits(S, task, getattr(cal, "input", "auto"))
    before = softmax(Z, axis=1) if task == "multiclass" else expit(Z)
    after = cal.predict_proba(S)
    out: dict[str, float] = {}
    for tag, P in (("before", before), ("after", after)):
        out[f"ece_{tag}"] = expected_calibration_error(y_test, P, task)
        out[f"auroc_{tag}"] = float(macro_auroc(y_test, P, task))
        out[f"nll_{tag}"] = negative_log_likelihood(y_test, P, task)
        out[f"brier_{tag}"] = brier_score(y_test, P, task)
    out["ece_reduction"] = out["ece_before"] - out["ece_after"]
    out["ece_relative_reduction"] = (
        out["ece_reduction"] / out["ece_before"] if out["ece_before"] > 0 else float("nan")
    )
    out["auroc_delta"] = out["auroc_after"] - out["auroc_before"]
    return out
