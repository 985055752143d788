"""Isotonic recalibration (per class one-vs-rest, renormalised; per label for multi-label)."""

from __future__ import annotations

import numpy as np
from scipy.special import expit, softmax
from sklearn.isotonic import IsotonicRegression

from crsbench.calibration.base import CalibratorBase, labelled


class IsotonicCalibration(CalibratorBase):
    """Monotone non-decreasing map of each class's (label's) probability, fitted by PAVA.

    Multi-class: one map per class on p_k against 1[y = k]; the mapped rows are renormalised
    to sum to one (a row mapped to all zeros falls back to the uniform distribution).
    Multi-label: one map per label on its labelled rows; no renormalisation. A column without
    both classes on the calibration rows keeps the identity map. Between the fitted steps the
    map interpolates linearly (outside them it is constant), and its values are bounded to
    [1/(n+2), 1 − 1/(n+2)] for a column fitted on n rows (the Laplace rule): a finite sample
    never yields a probability of exactly 0 or 1, whose log-loss would be infinite.

    Parameters
    ----------
    task : {"multiclass", "multilabel"}
    input : {"auto", "probs", "logits"}, default "auto"

    Attributes
    ----------
    maps_ : list of fitted ``IsotonicRegression`` or None (identity)
    """

    def __init__(self, task: str = "multiclass", input: str = "auto") -> None:
        self.task = task
        self.input = input

    def _probs(self, Z):
        return softmax(Z, axis=1) if self.task == "multiclass" else expit(Z)

    def _fit(self, Z, y):
        P = self._probs(Z)
        self.maps_ = []
        for j in range(P.shape[1]):
            if self.task == "multiclass":
                p, t = P[:, j], (y == j).astype(np.float64)
            else:
                m = labelled(y, j)
                p, t = P[m, j], y[m, j]
            if t.size == 0 or t.min() == t.max():
                self.maps_.append(None)
                continue
            bound = 1.0 / (t.size + 2.0)
            iso = IsotonicRegression(
                y_min=bound, y_max=1.0 - bound, out_of_bounds="clip", increasing=True
            )
            self.maps_.append(iso.fit(p, t))

    def _predict(self, Z):
        P = self._probs(Z)
        out = np.column_stack(
            [P[:, j] if f is None else f.predict(P[:, j]) for j, f in enumerate(self.maps_)]
        )
        if self.task == "multilabel":
            return out
        s = out.sum(axis=1, keepdims=True)
        return np.where(s > 0, out / np.where(s > 0, s, 1.0), 1.0 / out.shape[1])
