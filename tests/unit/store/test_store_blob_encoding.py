"""The stored probability matrices: float32 that keeps every metric, float64 only where not.

Thousands of continuous probabilities in one column always hold pairs closer than float32's
resolution; plain rounding tied them and forced the whole matrix to float64. The
order-preserving float32 keeps each column's order and ties, so the AUROC (scikit-learn's, an
independent implementation) is identical and the ECE moves by rounding only.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from crsbench.store.prediction_layout import (
    MAX_NUDGE,
    decode_matrix,
    encode_probabilities,
    order_preserving_float32,
)


def _roundtrip(prob: np.ndarray, task: str) -> tuple[np.ndarray, str]:
    data, dtype = encode_probabilities(prob, task)
    n, k = prob.shape
    return decode_matrix(data, n, k, dtype=dtype), dtype


def _crowded(rng: np.random.Generator, n: int) -> np.ndarray:
    """A column whose values come in runs closer than float32's step (runs of 1-5 values)."""
    centres = rng.uniform(0.2, 0.8, n)
    return centres + rng.integers(0, 5, n) * 1e-9 + rng.normal(0, 1e-10, n)


def test_plain_rounding_ties_a_large_column_and_the_order_preserving_values_do_not():
    x = np.random.default_rng(0).random((40_000, 3))
    assert all(len(np.unique(x[:, j].astype(np.float32))) < len(x) for j in range(3))
    y = order_preserving_float32(x)
    assert y.dtype == np.float32
    assert all(len(np.unique(y[:, j])) == len(x) for j in range(3))


@pytest.mark.parametrize("task", ["multilabel", "multiclass"])
def test_a_large_matrix_is_stored_as_float32_with_the_same_auroc(task):
    rng = np.random.default_rng(1)
    x = rng.random((30_000, 6))
    if task == "multiclass":
        x /= x.sum(axis=1, keepdims=True)
    y, dtype = _roundtrip(x, task)
    assert dtype == "<f4"
    labels = rng.random(x.shape) < 0.3
    for j in range(x.shape[1]):
        assert roc_auc_score(labels[:, j], y[:, j]) == roc_auc_score(labels[:, j], x[:, j])
    assert np.max(np.abs(y - x)) <= MAX_NUDGE


def test_runs_of_near_equal_values_keep_their_order_and_their_ties():
    rng = np.random.default_rng(2)
    col = _crowded(rng, 5_000)
    col[100:110] = col[99]  # exact ties stay ties
    x = np.column_stack([col, 1 - col])
    y = order_preserving_float32(x)
    for j in range(2):
        order = np.argsort(x[:, j], kind="stable")
        a, b = x[order, j], y[order, j].astype(np.float64)
        assert np.array_equal(np.diff(a) > 0, np.diff(b) > 0)
        assert np.all(np.diff(b) >= 0)
    assert len(np.unique(y[100:110, 0])) == 1 and y[99, 0] == y[100, 0]


def test_a_value_that_would_move_too_far_keeps_the_matrix_in_float64():
    # 20,000 distinct values inside one float32 step of 0.5: keeping their order needs
    # 20,000 steps up, far beyond the bound
    x = (0.5 + np.arange(20_000) * 1e-13)[:, None]
    y, dtype = _roundtrip(x, "multilabel")
    assert dtype == "<f8" and np.array_equal(y, x)


def test_a_top_class_that_float32_would_change_keeps_a_multiclass_matrix_in_float64():
    x = np.array([[0.41, 0.41 + 1e-12, 0.18 - 1e-12], [0.12, 0.33, 0.55]])
    y, dtype = _roundtrip(x, "multiclass")
    assert dtype == "<f8" and np.array_equal(y, x)
    # the same values as 3 labels: no top class to keep
    _, dtype = _roundtrip(x, "multilabel")
    assert dtype == "<f4"


def test_nan_stays_nan_and_takes_no_part_in_the_order():
    x = np.array([[0.3], [np.nan], [0.3 + 1e-12], [0.7]])
    y = order_preserving_float32(x)
    assert np.isnan(y[1, 0]) and y[0, 0] < y[2, 0] < y[3, 0]


def test_values_beyond_float32_and_empty_matrices():
    _, dtype = _roundtrip(np.array([[1e39], [0.5]]), "multilabel")
    assert dtype == "<f8"
    y, dtype = _roundtrip(np.zeros((3, 0)), "multiclass")
    assert dtype == "<f4" and y.shape == (3, 0)
