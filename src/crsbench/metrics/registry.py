"""The ``METRICS`` registry: every metric with its direction (``higher_is_better``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from crsbench.core.registry import Registry
from crsbench.metrics.auroc import macro_auroc
from crsbench.metrics.calibration_metrics import (
    brier_score,
    expected_calibration_error,
    negative_log_likelihood,
)
from crsbench.metrics.label_efficiency import aulc, retention
from crsbench.metrics.operating_point import sensitivity_at_specificity
from crsbench.metrics.robustness import robustness_drop


@dataclass(frozen=True)
class Metric:
    """A named metric function and its direction.

    Attributes
    ----------
    name : str
    fn : callable
        The pure function computing it.
    higher_is_better : bool
    kind : str
        ``"prediction"`` (takes ``y_true, y_score, task``) or ``"aggregate"`` (takes AUROCs).
    """

    name: str
    fn: Callable[..., Any]
    higher_is_better: bool
    kind: str = "prediction"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


METRICS: Registry[Metric] = Registry("metric")

for _metric in (
    Metric("macro_auroc", macro_auroc, True),
    Metric("ece", expected_calibration_error, False),
    Metric("brier", brier_score, False),
    Metric("nll", negative_log_likelihood, False),
    Metric("sens_at_spec90", partial(sensitivity_at_specificity, specificity=0.90), True),
    Metric("sens_at_spec95", partial(sensitivity_at_specificity, specificity=0.95), True),
    Metric("retention", retention, True, "aggregate"),
    Metric("aulc", aulc, True, "aggregate"),
    Metric("robustness_drop", robustness_drop, False, "aggregate"),
):
    METRICS.add(_metric.name, _metric)
