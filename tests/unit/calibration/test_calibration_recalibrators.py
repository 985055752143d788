"""Recalibrators: NLL/ECE improvements, AUROC preservation, monotonicity, contract, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit, softmax

from crsbench.calibration import (
    CALIBRATORS,
    DirichletCalibration,
    IsotonicCalibration,
    TemperatureScaling,
    VectorScaling,
    evaluate_recalibration,
)
from crsbench.core.errors import DataError, NotFittedError, RegistryError
from crsbench.metrics import expected_calibration_error, macro_auroc, negative_log_likelihood


def _overconfident(seed=0, n=3000, k=4, sharpen=3.0):
    """True probabilities softmax(z); reported probabilities softmax(sharpen · z)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 1.2
    y = np.array([rng.choice(k, p=p) for p in softmax(z, axis=1)])
    return softmax(sharpen * z, axis=1), y


def _overconfident_multilabel(seed=0, n=3000, L=3):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, L)) * 1.5 - 0.5
    Y = (rng.random((n, L)) < expit(z)).astype(float)
    Y[rng.random((n, L)) < 0.1] = np.nan
    return expit(3.0 * z), Y


def test_temperature_lowers_nll_and_keeps_auroc():
    P, y = _overconfident()
    cal = TemperatureScaling().fit(P[:1500], y[:1500])
    assert cal.temperature_ == pytest.approx(3.0, rel=0.15)
    Q = cal.predict_proba(P[1500:])
    yt = y[1500:]
    assert negative_log_likelihood(yt, Q, "multiclass") < negative_log_likelihood(
        yt, P[1500:], "multiclass"
    )
    # softmax(z / T) keeps every row's argmax; the one-vs-rest ranking of p_k across rows can
    # move slightly (p_k also depends on the other logits), so multiclass AUROC is near-equal.
    np.testing.assert_array_equal(Q.argmax(1), P[1500:].argmax(1))
    assert expected_calibration_error(yt, Q, "multiclass") < expected_calibration_error(
        yt, P[1500:], "multiclass"
    )
    assert abs(macro_auroc(yt, Q, "multiclass") - macro_auroc(yt, P[1500:], "multiclass")) < 0.005


def test_temperature_leaves_multilabel_auroc_exactly_unchanged():
    P, Y = _overconfident_multilabel()
    cal = TemperatureScaling(task="multilabel").fit(P[:1500], Y[:1500])
    Q = cal.predict_proba(P[1500:])
    Yt = Y[1500:]
    assert negative_log_likelihood(Yt, Q, "multilabel") < negative_log_likelihood(
        Yt, P[1500:], "multilabel"
    )
    assert macro_auroc(Yt, Q, "multilabel") == pytest.approx(
        macro_auroc(Yt, P[1500:], "multilabel"), abs=1e-12
    )


@pytest.mark.parametrize("name", ["temperature", "vector", "isotonic", "dirichlet"])
@pytest.mark.parametrize("task", ["multiclass", "multilabel"])
def test_every_calibrator_improves_a_miscalibrated_case(name, task):
    P, y = _overconfident() if task == "multiclass" else _overconfident_multilabel()
    out = evaluate_recalibration(name, P[:1500], y[:1500], P[1500:], y[1500:], task)
    assert out["ece_after"] < out["ece_before"]
    assert out["nll_after"] < out["nll_before"]
    assert abs(out["auroc_delta"]) < 0.02
    assert out["ece_relative_reduction"] == pytest.approx(out["ece_reduction"] / out["ece_before"])
    Q = CALIBRATORS.get(name)(task=task).fit(P[:1500], y[:1500]).predict_proba(P[1500:])
    assert np.all((Q >= 0) & (Q <= 1))
    if task == "multiclass":
        np.testing.assert_allclose(Q.sum(axis=1), 1.0, atol=1e-9)


def test_isotonic_output_is_monotone_per_class():
    P, y = _overconfident(1)
    cal = IsotonicCalibration(task="multilabel").fit(P, np.eye(4)[y])
    grid = np.tile(np.linspace(0, 1, 201)[:, None], (1, 4))
    Q = cal.predict_proba(grid)
    assert np.all(np.diff(Q, axis=0) >= 0)


def test_logits_and_probabilities_give_the_same_temperature():
    P, y = _overconfident(2)
    a = TemperatureScaling(input="probs").fit(P, y).temperature_
    b = TemperatureScaling(input="logits").fit(np.log(P), y).temperature_
    assert a == pytest.approx(b, rel=1e-6)


def test_vector_and_dirichlet_recover_identity_on_calibrated_scores():
    rng = np.random.default_rng(3)
    z = rng.normal(size=(4000, 3))
    y = np.array([rng.choice(3, p=p) for p in softmax(z, axis=1)])
    v = VectorScaling(input="logits").fit(z, y)
    np.testing.assert_allclose(v.scale_, 1.0, atol=0.15)
    d = DirichletCalibration(input="logits").fit(z, y)
    np.testing.assert_allclose(d.weights_ - d.weights_.mean(0), np.eye(3) - 1 / 3, atol=0.2)


def test_contract_and_bad_input():
    P, y = _overconfident(4, n=200)
    with pytest.raises(NotFittedError):
        TemperatureScaling().predict_proba(P)
    with pytest.raises(RegistryError, match="Did you mean"):
        CALIBRATORS.get("temperatur")
    with pytest.raises(DataError, match="class indices"):
        TemperatureScaling().fit(P, y + 10)
    with pytest.raises(DataError, match="4 feature columns"):
        TemperatureScaling().fit(P, y).predict_proba(P[:, :3])
    with pytest.raises(ValueError, match="input must be one of"):
        TemperatureScaling(input="odds").fit(P, y)
    with pytest.raises(ValueError, match="reg_lambda"):
        DirichletCalibration(reg_lambda=-1.0).fit(P, y)
    assert CALIBRATORS.names() == ["dirichlet", "isotonic", "temperature", "vector"]
