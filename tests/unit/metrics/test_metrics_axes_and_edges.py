"""Metrics: excluded labels, undefined cases, label efficiency, robustness, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crsbench.core.errors import DataError
from crsbench.metrics import (
    UndefinedMetricWarning,
    aulc,
    drops,
    expected_calibration_error,
    macro_auroc,
    retention,
    robustness_drop,
    sensitivity_at_specificity,
)


def test_label_without_positives_is_excluded_and_reported():
    rng = np.random.default_rng(0)
    Y = (rng.random((50, 3)) < 0.5).astype(float)
    Y[:, 1] = 0.0
    S = rng.random((50, 3))
    d = macro_auroc(Y, S, "multilabel", return_details=True)
    assert d.excluded == {1: "no positives"} and d.n_excluded == 1
    assert math.isnan(d.per_label[1]) and d.n_pos[1] == 0
    assert d.value == pytest.approx(np.nanmean(d.per_label[[0, 2]]))


def test_absent_class_in_multiclass_test_set_is_excluded():
    y = np.array([0, 1, 0, 1, 0])
    P = np.array([[0.6, 0.3, 0.1]] * 5)
    d = macro_auroc(y, P, "multiclass", return_details=True)
    assert d.excluded == {2: "no positives"}


def test_single_class_test_set_returns_nan_with_reason():
    y = np.zeros(10, dtype=int)
    P = np.tile([0.7, 0.3], (10, 1))
    with pytest.warns(UndefinedMetricWarning, match="undefined"):
        d = macro_auroc(y, P, "multiclass", return_details=True)
    assert math.isnan(d.value) and d.excluded == {0: "no negatives", 1: "no positives"}
    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(sensitivity_at_specificity(y, P, "multiclass"))


def test_all_nan_label_is_excluded_from_auroc_and_ece():
    Y = np.array([[0.0, np.nan], [1.0, np.nan], [1.0, np.nan]])
    P = np.array([[0.2, 0.5], [0.8, 0.5], [0.6, 0.5]])
    d = macro_auroc(Y, P, "multilabel", return_details=True)
    assert d.value == 1.0 and d.excluded == {1: "no labelled rows"}
    assert expected_calibration_error(Y, P, "multilabel") == pytest.approx(
        expected_calibration_error(Y[:, :1], P[:, :1], "multilabel")
    )


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(DataError, match="class indices in \\[0, 1\\]"):
        macro_auroc(np.array([0, 2]), np.ones((2, 2)) / 2, "multiclass")
    with pytest.raises(DataError, match="0, 1 or NaN.*-1"):
        macro_auroc(np.array([[1.0], [-1.0]]), np.ones((2, 1)), "multilabel")
    with pytest.raises(DataError, match="finite"):
        macro_auroc(np.array([0, 1]), np.array([[np.nan, 1.0], [0.5, 0.5]]), "multiclass")
    with pytest.raises(DataError, match="shape"):
        expected_calibration_error(np.ones((3, 2)), np.ones((3, 3)) / 3, "multilabel")
    with pytest.raises(DataError, match="probabilities"):
        expected_calibration_error(
            np.array([0, 1]), np.array([[1.5, -0.5], [0.5, 0.5]]), "multiclass"
        )
    with pytest.raises(ValueError, match="task must be one of"):
        macro_auroc(np.array([0, 1]), np.ones((2, 2)), "binary")


def test_retention_and_aulc_hand_worked():
    curve = {0.01: 0.6, 0.05: 0.7, 0.10: 0.75, 0.25: 0.8, 1.0: 0.9}
    assert retention(curve) == pytest.approx((0.6 + 0.7 + 0.75 + 0.8) / 4 / 0.9)
    x = np.log10([0.01, 0.05, 0.10, 0.25, 1.0])
    y = np.array([0.6, 0.7, 0.75, 0.8, 0.9])
    ref = np.sum(np.diff(x) * (y[1:] + y[:-1]) / 2) / (x[-1] - x[0])
    assert aulc(curve) == pytest.approx(ref)
    assert aulc({0.1: 0.8, 1.0: 0.8}) == pytest.approx(0.8)
    with pytest.raises(DataError, match="fraction 0.05"):
        retention({0.01: 0.6, 1.0: 0.9})
    with pytest.raises(DataError, match=">= 2 label fractions"):
        aulc({1.0: 0.9})


def test_robustness_drop_with_shift_condition():
    assert robustness_drop(0.9, [0.85, 0.8, 0.9]) == pytest.approx(0.5 * 0.05 + 0.5 * 0.1)
    d = drops(0.9, {"blur@1": 0.85}, shift_auroc=0.7)
    assert d == pytest.approx({"blur@1": 0.05, "shift": 0.2})
    assert robustness_drop(0.9, {"blur@1": 0.85}, 0.7) == pytest.approx(0.5 * 0.125 + 0.5 * 0.2)
    assert math.isnan(robustness_drop(0.9, [float("nan"), 0.8]))


def test_a_perfect_separation_scores_one():
    y = np.array([0, 1, 1, 0])
    P = np.array([[0.9, 0.1], [0.2, 0.8], [0.4, 0.6], [0.6, 0.4]])
    assert macro_auroc(y, P, "multiclass") == 1.0
    assert sensitivity_at_specificity(y, P, "multiclass", specificity=0.95) == 1.0
