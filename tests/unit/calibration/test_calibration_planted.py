"""Planted miscalibration (z / T + b on the logits of a calibrated model): every recalibrator
halves the ECE with 5,000 calibration rows and never raises it beyond noise with 200.

Noise: ECE after ≤ ECE before + 2 × the bootstrap SD of the ECE after (100 resamples of the
20,000 test rows), for each of three calibration draws.
"""

from __future__ import annotations

import pytest
from planted_helpers import bootstrap_sd, draw, probs

from crsbench.calibration import fit_recalibrator
from crsbench.metrics import expected_calibration_error
from crsbench.protocol import RECALIBRATORS

N_TEST = 20_000


def _ece_pair(method, task, n_calib, seed):
    Zt, yt = draw(task, N_TEST, 999)
    Zc, yc = draw(task, n_calib, seed)
    fit = fit_recalibrator(method, Zc, yc, task, seed, input="logits")
    P0, P1 = probs(Zt, task), fit.predict_proba(Zt)
    before = expected_calibration_error(yt, P0, task)
    after = expected_calibration_error(yt, P1, task)
    return before, after, bootstrap_sd(yt, P1, task), fit


def _slow(method, task):
    """Dirichlet's 25-candidate grid × 5 folds takes 10–30 s here: slow."""
    return pytest.mark.slow if method == "dirichlet" else ()


@pytest.mark.parametrize(
    ("method", "task"),
    [
        pytest.param(m, t, marks=_slow(m, t))
        for t in ("multiclass", "multilabel")
        for m in RECALIBRATORS
    ],
)
def test_recalibrator_halves_planted_ece_on_5000(method, task):
    before, after, _, fit = _ece_pair(method, task, 5_000, seed=1)
    assert before > 0.09  # the planted miscalibration is large
    assert fit.choice == "fitted"
    assert after <= 0.5 * before


@pytest.mark.parametrize(
    ("method", "task"),
    [
        pytest.param(m, t, marks=_slow(m, t))
        for t in ("multiclass", "multilabel")
        for m in RECALIBRATORS
    ],
)
def test_recalibrator_never_raises_ece_beyond_noise_on_200(method, task):
    for seed in range(3):
        before, after, sd, _ = _ece_pair(method, task, 200, seed)
        assert after <= before + 2 * sd, (seed, before, after, sd)
