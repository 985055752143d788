"""Shared plumbing for recalibrators: input conversion (probabilities or logits) and checks."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator

from crsbench.core.errors import DataError, NotFittedError
from crsbench.core.types import check_task
from crsbench.core.validation import check_features, check_targets

_EPS = 1e-12
INPUTS = ("auto", "probs", "logits")


def to_logits(scores: np.ndarray, task: str, kind: str) -> np.ndarray:
    """Scores as logits: log-probabilities (multiclass) or log-odds (multilabel).

    ``kind="auto"`` treats the scores as probabilities when all lie in [0, 1] (and, for
    multiclass, rows sum to one within 1e-6); otherwise as logits.
    """
    if kind not in INPUTS:
        raise ValueError(f"input must be one of {INPUTS}. Got {kind!r} instead.")
    if kind == "auto":
        in_range = scores.min() >= 0.0 and scores.max() <= 1.0
        sums_ok = task == "multilabel" or np.allclose(scores.sum(axis=1), 1.0, atol=1e-6)
        kind = "probs" if in_range and sums_ok else "logits"
    if kind == "logits":
        return scores.astype(np.float64)
    if scores.min() < 0.0 or scores.max() > 1.0:
        raise DataError(
            f"probabilities must lie in [0, 1]. Got values in [{scores.min():.4g}, "
            f"{scores.max():.4g}] instead."
        )
    p = np.clip(scores.astype(np.float64), _EPS, 1.0 - _EPS)
    if task == "multiclass":
        return np.log(p)
    return np.log(p) - np.log1p(-p)


class CalibratorBase(BaseEstimator):
    """Base of the recalibrators (scikit-learn contract: ``fit``, ``predict_proba``).

    Subclasses implement ``_fit(Z, y)`` and ``_predict(Z)`` on logits ``Z``.
    """

    task: str
    input: str

    def fit(self, scores: object, y: object) -> CalibratorBase:
        """Fit on calibration-split scores (N×K probabilities or logits) and targets."""
        check_task(self.task)
        S = check_features(scores, "scores").astype(np.float64)
        yy = check_targets(y, self.task, S.shape[0], "y", S.shape[1])
        if self.task == "multilabel" and S.shape[1] != yy.shape[1]:
            raise DataError(f"y must have {S.shape[1]} label columns. Got {yy.shape[1]} instead.")
        self._fit(to_logits(S, self.task, self.input), yy)
        self.n_outputs_ = S.shape[1]
        return self

    def predict_proba(self, scores: object) -> np.ndarray:
        """Recalibrated N×K probabilities."""
        if not hasattr(self, "n_outputs_"):
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet. Call 'fit' first."
            )
        S = check_features(scores, "scores", self.n_outputs_).astype(np.float64)
        return self._predict(to_logits(S, self.task, self.input))

    def _fit(self, Z: np.ndarray, y: np.ndarray) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _predict(self, Z: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


def labelled(y: np.ndarray, j: int) -> np.ndarray:
    """Boolean mask of the labelled rows of label ``j``."""
    return ~np.isnan(y[:, j])
