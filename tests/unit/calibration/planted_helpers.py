"""Planted miscalibration: labels drawn from softmax(z) (sigmoid per label), scores z / T + b."""

from __future__ import annotations

import numpy as np
from scipy.special import expit, softmax

from crsbench.metrics import expected_calibration_error

#: Planted temperature and biases (multi-class K = 4, multi-label L = 3).
T_PLANTED = 0.5
B_MULTICLASS = np.array([0.4, -0.3, 0.0, 0.2])
B_MULTILABEL = np.array([0.4, -0.3, 0.2])


def draw(task: str, n: int, seed: int):
    """Scores (logits) of a model miscalibrated by ``z / T + b`` and labels from the true z."""
    rng = np.random.default_rng(seed)
    if task == "multiclass":
        z = rng.normal(size=(n, 4)) * 1.5
        y = (rng.random(n)[:, None] > np.cumsum(softmax(z, axis=1), axis=1)).sum(axis=1)
        b = B_MULTICLASS
    else:
        z = rng.normal(size=(n, 3)) * 1.5 - 0.5
        y = (rng.random((n, 3)) < expit(z)).astype(float)
        b = B_MULTILABEL
    return z / T_PLANTED + b, y


def probs(Z: np.ndarray, task: str) -> np.ndarray:
    return softmax(Z, axis=1) if task == "multiclass" else expit(Z)


def bootstrap_sd(y, P, task: str, seed: int = 0, n_boot: int = 100) -> float:
    """SD of the ECE over bootstrap resamples of the test rows."""
    rng = np.random.default_rng(seed)
    n = len(y)
    vals = [
        expected_calibration_error(y[i], P[i], task)
        for i in (rng.integers(0, n, n) for _ in range(n_boot))
    ]
    return float(np.std(vals, ddof=1))
