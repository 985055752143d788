"""Metrics as pure functions on arrays (docs/protocol.md section 7). Never imports torch or PIL."""

from __future__ import annotations

from crsbench.metrics._checks import UndefinedMetricWarning
from crsbench.metrics.auroc import MetricDetails, auroc_batch, macro_auroc
from crsbench.metrics.calibration_metrics import (
    binned_ece,
    brier_score,
    expected_calibration_error,
    negative_log_likelihood,
)
from crsbench.metrics.label_efficiency import aulc, retention
from crsbench.metrics.operating_point import sensitivity_at_specificity
from crsbench.metrics.robustness import drops, robustness_drop, robustness_from_drops

__all__ = [
    "MetricDetails",
    "UndefinedMetricWarning",
    "aulc",
    "auroc_batch",
    "binned_ece",
    "brier_score",
    "drops",
    "expected_calibration_error",
    "macro_auroc",
    "negative_log_likelihood",
    "retention",
    "robustness_drop",
    "robustness_from_drops",
    "sensitivity_at_specificity",
]
