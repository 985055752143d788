"""netcal (an independent implementation) as the reference for ECE and temperature scaling.

Binning: netcal bins with ``np.histogramdd`` on ``linspace(0, 1, 16)``, i.e. [a, b) bins with 1.0
in the last, after clipping confidences to [eps, 1 − eps]: the same bins as ours. Difference:
netcal reads a 2-column (or any input whose labels hold ≤ 2 distinct values) as a binary problem
and scores the positive-class probability, where our multi-class ECE is top-label; the
comparisons below use K = 4 with every class present, and per-label columns for multi-label.
netcal's ``TemperatureScaling.weights`` is 1/T.
"""

from __future__ import annotations

import netcal.metrics as netcal_metrics
import netcal.scaling as netcal_scaling
import numpy as np
import pytest
from planted_helpers import draw, probs

from crsbench.calibration import TemperatureScaling, fit_recalibrator
from crsbench.metrics import expected_calibration_error


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_multiclass_ece_equals_netcal(seed):
    Z, y = draw("multiclass", 3000, seed)
    P = probs(Z, "multiclass")
    ref = netcal_metrics.ECE(bins=15).measure(P, y)
    assert expected_calibration_error(y, P, "multiclass") == pytest.approx(ref, abs=1e-12)


def test_multilabel_ece_is_the_mean_of_netcal_binary_ece():
    Z, Y = draw("multilabel", 3000, 0)
    P = probs(Z, "multilabel")
    ref = np.mean([netcal_metrics.ECE(bins=15).measure(P[:, j], Y[:, j]) for j in range(3)])
    assert expected_calibration_error(Y, P, "multilabel") == pytest.approx(ref, abs=1e-12)


def test_multiclass_temperature_equals_netcal():
    Z, y = draw("multiclass", 3000, 0)
    P = probs(Z, "multiclass")
    ref = netcal_scaling.TemperatureScaling()
    ref.fit(P, y)
    ours = TemperatureScaling().fit(P, y)
    assert ours.temperature_ == pytest.approx(1.0 / float(ref.weights[0]), rel=1e-4)
    np.testing.assert_allclose(ours.predict_proba(P), ref.transform(P), atol=1e-5)


def test_cv_fitted_temperature_equals_netcal_on_the_whole_split():
    Z, y = draw("multiclass", 3000, 0)
    P = probs(Z, "multiclass")
    fit = fit_recalibrator("temperature", P, y, "multiclass", seed=0)
    assert fit.choice == "fitted"
    ref = netcal_scaling.TemperatureScaling()
    ref.fit(P, y)
    np.testing.assert_allclose(fit.predict_proba(P), ref.transform(P), atol=1e-5)
