"""Fit a recalibrator on the calibration split and report before/after metrics on test."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit, softmax

from crsbench.calibration.base import CalibratorBase, to_logits
from crsbench.calibration.recal_settings import RecalProtocol
from crsbench.calibration.selection import fit_recalibrator
from crsbench.core.types import check_task
from crsbench.core.validation import check_features
from crsbench.metrics import (
    brier_score,
    expected_calibration_error,
    macro_auroc,
    negative_log_likelihood,
)


def evaluate_recalibration(
    method: str | CalibratorBase,
    p_calib: np.ndarray,
    y_calib: np.ndarray,
    p_test: np.ndarray,
    y_test: np.ndarray,
    task: str,
    seed: int = 0,
    protocol: RecalProtocol | None = None,
) -> dict[str, Any]:
    """Recalibrate on the calibration split; score the test split before and after.

    Parameters
    ----------
    method : str or calibrator
        A name ("temperature", "vector", "isotonic", "dirichlet"): fitted by
        :func:`crsbench.calibration.fit_recalibrator` (regularisation chosen by CV, identity
        map kept unless it loses, too-small splits refused). An unfitted calibrator instance:
        fitted as it is, without CV or size check.
    p_calib, y_calib : calibration-split probabilities (or logits) and targets.
    p_test, y_test : test-split probabilities (or logits) and targets.
    task : {"multiclass", "multilabel"}
    seed : int, default 0
        Seed of the CV folds (named methods only).
    protocol : RecalProtocol, optional
        Default: the packaged ``recal_v1.yaml`` (named methods only).

    Returns
    -------
    dict
        ``ece_before``, ``ece_after``, ``ece_reduction`` (absolute), ``ece_relative_reduction``,
        ``auroc_before``, ``auroc_after``, ``auroc_delta``, ``nll_before``, ``nll_after``,
        ``brier_before``, ``brier_after``; for a named method also ``recal`` (the record of
        :meth:`RecalibrationFit.record`: choice, parameters, CV losses).

    Raises
    ------
    CalibrationSplitTooSmall
        For a named method, if some class of the calibration split is below the minimum.
    """
    check_task(task)
    out: dict[str, Any] = {}
    if isinstance(method, str):
        cal: Any = fit_recalibrator(method, p_calib, y_calib, task, seed, protocol)
        out["recal"] = cal.record()
    else:
        cal = method.fit(p_calib, y_calib)
    S = check_features(p_test, "p_test").astype(np.float64)
    Z = to_logits(S, task, getattr(cal, "input", "auto"))
    before = softmax(Z, axis=1) if task == "multiclass" else expit(Z)
    after = cal.predict_proba(S)
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
