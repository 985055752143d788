"""Shared estimator plumbing for the probes (scikit-learn contract, crsbench errors)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from sklearn.base import BaseEstimator

from crsbench.core.errors import NotFittedError
from crsbench.core.types import check_task
from crsbench.core.validation import check_features, check_targets


class ProbeBase(BaseEstimator):
    """Base of the probes: parameter checks, target handling, ``predict`` from ``predict_proba``.

    Subclasses set ``task`` and implement ``_fit`` and ``_predict_proba``.
    """

    task: str

    def _check_fitted(self) -> None:
        if not hasattr(self, "n_features_in_"):
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet. Call 'fit' first."
            )

    def _prepare(
        self, X: npt.ArrayLike, y: npt.ArrayLike, n_outputs: int | None = None
    ) -> tuple[np.ndarray, np.ndarray, int]:
        check_task(self.task)
        X = check_features(X, "X")
        y = check_targets(y, self.task, X.shape[0], "y")
        if self.task == "multiclass":
            k = int(y.max()) + 1 if n_outputs is None else int(n_outputs)
            y = check_targets(y, self.task, X.shape[0], "y", k)
        else:
            k = y.shape[1]
        return X, y, k

    def _set_fitted(self, n_features: int, n_outputs: int) -> None:
        """Record the learned shape attributes (last step of a successful ``fit``)."""
        self.n_outputs_ = n_outputs
        if self.task == "multiclass":
            self.classes_ = np.arange(n_outputs)
        self.n_features_in_ = n_features

    def predict_proba(self, X: npt.ArrayLike) -> np.ndarray:
        """N×K probabilities: multiclass rows sum to one; multilabel independent per label."""
        self._check_fitted()
        return self._predict_proba(check_features(X, "X", self.n_features_in_))

    def predict(self, X: npt.ArrayLike) -> np.ndarray:
        """Class index (multiclass argmax) or a 0/1 matrix (multilabel, probability ≥ 0.5)."""
        p = self.predict_proba(X)
        if self.task == "multiclass":
            return p.argmax(axis=1)
        return (p >= 0.5).astype(np.int64)

    def _predict_proba(self, X: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError
