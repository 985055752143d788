"""CV choice of the recalibration: identity fallback, recorded choice, seeded folds, the
minimum calibration size, and the protocol file."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax

from crsbench.calibration import (
    CalibrationSplitTooSmall,
    TemperatureScaling,
    check_calibration_size,
    fit_recalibrator,
    load_recal_protocol,
)
from crsbench.core.errors import ConfigError
from crsbench.protocol import RECALIBRATORS


def _calibrated(seed=0, n=100, k=3):
    """Logits of an already calibrated model: labels drawn from softmax(z)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 1.5
    y = (rng.random(n)[:, None] > np.cumsum(softmax(z, axis=1), axis=1)).sum(axis=1)
    return z, y


@pytest.mark.parametrize("method", RECALIBRATORS)
def test_calibrated_scores_keep_the_identity_map(method):
    z, y = _calibrated()
    fit = fit_recalibrator(method, z, y, "multiclass", seed=0, input="logits")
    rec = fit.record()
    assert fit.choice == "identity" and rec["choice"] == "identity"
    assert rec["cv_nll_fitted"] >= rec["cv_nll_identity"]
    np.testing.assert_array_equal(fit.predict_proba(z), softmax(z, axis=1))


def test_miscalibrated_scores_are_fitted_and_the_grid_choice_is_recorded():
    z, y = _calibrated(n=600)
    fit = fit_recalibrator("dirichlet", 3.0 * z, y, "multiclass", seed=0, input="logits")
    rec = fit.record()
    assert rec["choice"] == "fitted" and rec["cv_nll_fitted"] < rec["cv_nll_identity"]
    grid = load_recal_protocol().grids["dirichlet"]
    assert rec["params"] in [dict(g) for g in grid]
    assert rec | {"params": None} == rec | {
        "protocol": "v1", "loss": "nll", "n_folds": 5, "min_per_class": 15, "seed": 0,
        "params": None,
    }  # fmt: skip


def test_folds_are_seeded():
    z, y = _calibrated(n=600)
    a = fit_recalibrator("vector", 3.0 * z, y, "multiclass", seed=3, input="logits").record()
    b = fit_recalibrator("vector", 3.0 * z, y, "multiclass", seed=3, input="logits").record()
    c = fit_recalibrator("vector", 3.0 * z, y, "multiclass", seed=4, input="logits").record()
    assert a == b
    assert a["cv_nll_fitted"] != c["cv_nll_fitted"]


def test_multilabel_choice_is_per_label():
    rng = np.random.default_rng(0)
    z = rng.normal(size=(400, 2)) * 1.5
    Y = (rng.random((400, 2)) < 1 / (1 + np.exp(-z))).astype(float)
    Y[:20, 1] = np.nan
    S = np.column_stack([z[:, 0], 4.0 * z[:, 1]])  # label 0 calibrated, label 1 overconfident
    fit = fit_recalibrator("temperature", S, Y, "multilabel", seed=0, input="logits")
    labels = fit.record()["labels"]
    assert [lab["choice"] for lab in labels] == ["identity", "fitted"]
    assert fit.choice == "mixed"
    P = fit.predict_proba(S)
    np.testing.assert_allclose(P[:, 0], 1 / (1 + np.exp(-S[:, 0])), rtol=1e-12)
    m = ~np.isnan(Y[:, 1])
    plain = TemperatureScaling(task="multilabel", input="logits").fit(S[m, 1:], Y[m, 1:])
    assert fit.choices[1].model.temperature_[0] == pytest.approx(plain.temperature_[0])
    assert plain.temperature_[0] > 2.0


def test_too_small_multiclass_names_the_class_and_count():
    y = np.array([0] * 25 + [1] * 19 + [2] * 30)
    with pytest.raises(
        CalibrationSplitTooSmall, match=r"^calibration split too small: class 1 has n=19 < 20$"
    ):
        check_calibration_size(y, "multiclass", 3, 20)
    with pytest.raises(CalibrationSplitTooSmall, match=r"class 3 has n=0 < 15"):
        y4 = np.array([0] * 25 + [1] * 20 + [2] * 30)  # class 3 never appears
        fit_recalibrator("temperature", np.zeros((75, 4)), y4, "multiclass", seed=0, input="logits")


def test_too_small_multilabel_counts_positives_and_negatives_of_labelled_rows():
    Y = np.zeros((60, 2))
    Y[:30, 0] = 1.0
    Y[:25, 1] = 1.0
    Y[25:45, 1] = np.nan  # label 1: 25 positives, 15 labelled negatives
    check_calibration_size(Y[:, :1], "multilabel", 1, 20)
    with pytest.raises(CalibrationSplitTooSmall, match=r"label 1 has n=15 negatives < 20"):
        check_calibration_size(Y, "multilabel", 2, 20)


def test_protocol_file_errors_name_the_file_and_key(tmp_path):
    p = tmp_path / "recal.yaml"
    p.write_text("version: x\nloss: nll\nn_folds: 5\nmin_per_class: 3\ngrids: {}\n")
    with pytest.raises(
        ConfigError, match=r"recal.yaml: min_per_class must be an integer >= n_folds"
    ):
        load_recal_protocol(p)
    p.write_text("version: x\nloss: brier\nn_folds: 5\nmin_per_class: 20\ngrids: {}\n")
    with pytest.raises(ConfigError, match=r"loss must be 'nll'"):
        load_recal_protocol(p)
