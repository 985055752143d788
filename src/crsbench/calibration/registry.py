"""``CALIBRATORS``: name → recalibrator class."""

from __future__ import annotations

from crsbench.calibration.dirichlet import DirichletCalibration
from crsbench.calibration.isotonic import IsotonicCalibration
from crsbench.calibration.scaling import TemperatureScaling, VectorScaling
from crsbench.core.registry import Registry

CALIBRATORS: Registry[type] = Registry("calibrator")
CALIBRATORS.add("temperature", TemperatureScaling)
CALIBRATORS.add("vector", VectorScaling)
CALIBRATORS.add("isotonic", IsotonicCalibration)
CALIBRATORS.add("dirichlet", DirichletCalibration)
