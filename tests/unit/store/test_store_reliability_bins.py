"""Reliability bins reproduce the protocol's ECE exactly (same 15 equal-width bins)."""

from __future__ import annotations

import numpy as np
import pytest

from crsbench.metrics import expected_calibration_error
from crsbench.store.reliability import reliability_bins


def _ece_from_bins(b: dict) -> float:
    n = np.asarray(b["count"], dtype=float)
    return float(np.sum(n / n.sum() * np.abs(np.asarray(b["acc"]) - np.asarray(b["conf"]))))


@pytest.mark.parametrize("task", ["multiclass", "multilabel"])
def test_bins_give_the_same_ece_as_the_metric(task):
    rng = np.random.default_rng(0)
    if task == "multiclass":
        logits = rng.normal(size=(300, 4)) * 2
        prob = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
        y = rng.integers(0, 4, 300)
        ece = expected_calibration_error(y, prob, task)
        assert ece == pytest.approx(_ece_from_bins(reliability_bins(y, prob, task)), abs=1e-9)
    else:
        prob = rng.random((200, 3))
        y = (rng.random((200, 3)) < prob).astype(float)
        y[rng.random((200, 3)) < 0.1] = np.nan
        b = reliability_bins(y, prob, task)
        assert sum(b["count"]) == int((~np.isnan(y)).sum())
        assert all(0 <= c <= 1 for c in b["conf"]) and all(0 <= a <= 1 for a in b["acc"])


def test_hand_worked_two_bins():
    # top-label confidences 0.95, 0.95 (one right) and 0.55 (right): bins 14 and 8
    prob = np.array([[0.95, 0.05], [0.05, 0.95], [0.55, 0.45]])
    y = np.array([0, 0, 0])
    b = reliability_bins(y, prob, "multiclass")
    assert b == {"bin": [8, 14], "conf": [0.55, 0.95], "acc": [1.0, 0.5], "count": [1, 2]}
