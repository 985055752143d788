"""Post-hoc recalibration fitted on the calibration split (docs/protocol.md section 10).

Never imports torch or PIL. Every calibrator takes probabilities or logits
(``fit(scores, y)``, ``predict_proba(scores)``) for multi-class and multi-label tasks.
"""

from __future__ import annotations

from crsbench.calibration.base import CalibratorBase, to_logits
from crsbench.calibration.dirichlet import DirichletCalibration
from crsbench.calibration.evaluate import evaluate_recalibration
from crsbench.calibration.isotonic import IsotonicCalibration
from crsbench.calibration.recal_settings import (
    CalibrationSplitTooSmall,
    RecalProtocol,
    check_calibration_size,
    load_recal_protocol,
)
from crsbench.calibration.registry import CALIBRATORS
from crsbench.calibration.scaling import TemperatureScaling, VectorScaling
from crsbench.calibration.selection import RecalibrationFit, fit_recalibrator

__all__ = [
    "CALIBRATORS",
    "CalibrationSplitTooSmall",
    "CalibratorBase",
    "DirichletCalibration",
    "IsotonicCalibration",
    "RecalProtocol",
    "RecalibrationFit",
    "TemperatureScaling",
    "VectorScaling",
    "check_calibration_size",
    "evaluate_recalibration",
    "fit_recalibrator",
    "load_recal_protocol",
    "to_logits",
]
