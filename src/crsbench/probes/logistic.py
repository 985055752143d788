"""L2 logistic-regression probe (one fit, one C) on the batched engine's solver."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from crsbench.core.errors import DataError
from crsbench.core.validation import check_C
from crsbench.probes.base import ProbeBase
from crsbench.probes.fitted import FittedLinear
from crsbench.probes.grid import DEFAULT_MAX_ITER, DEFAULT_TOL, fit_probe_grid
from crsbench.protocol import LOGISTIC_STOP


class LogisticProbe(ProbeBase):
    """L2-regularised logistic regression: softmax (multiclass) or one sigmoid per label.

    Same objective as ``sklearn.linear_model.LogisticRegression(C=C)`` on features
    standardised with the statistics of the fitted rows (bias not penalised). Multi-label
    NaN targets are masked out of that label's loss.

    Parameters
    ----------
    C : float, default 1.0
        Inverse regularisation strength.
    task : {"multiclass", "multilabel"}, default "multiclass"
    max_iter : int, default 1000
    tol : float, default 1e-4
        The stopping rule's tolerance.
    stop : {"probabilities", "gradient"}, default "probabilities"
        The stopping rule: the quasi-Newton step moves no training row's probability by
        more than ``tol`` (scaled to the problem), or scikit-learn's lbfgs test (gradient
        max-norm over the standardised features' weights and biases at most ``tol``).
    dtype : {"float64", "float32"}, default "float64"
        Working precision of the matrix products.
    n_outputs : int, optional
        Number of classes (multiclass); default ``max(y) + 1``.

    Attributes
    ----------
    coef_ : ndarray of shape (K, d)
    intercept_ : ndarray of shape (K,)
        Absent classes get ``-inf``; unfittable labels a constant prevalence.
    classes_ : ndarray (multiclass only)
    n_features_in_, n_outputs_, n_iter_, converged_ : learned attributes
    fit_info_ : FittedLinear
        Full record (skipped classes/labels, flags).
    """

    def __init__(
        self,
        C: float = 1.0,
        task: str = "multiclass",
        max_iter: int = DEFAULT_MAX_ITER,
        tol: float = DEFAULT_TOL,
        dtype: str = "float64",
        n_outputs: int | None = None,
        stop: str = LOGISTIC_STOP,
    ) -> None:
        self.C = C
        self.task = task
        self.max_iter = max_iter
        self.tol = tol
        self.dtype = dtype
        self.n_outputs = n_outputs
        self.stop = stop

    def fit(self, X: npt.ArrayLike, y: npt.ArrayLike) -> LogisticProbe:
        """Fit on features ``X`` (N×d) and targets ``y`` (class vector or 0/1/NaN matrix)."""
        C = check_C(self.C)
        if self.dtype not in ("float64", "float32"):
            raise ValueError(f"dtype must be 'float64' or 'float32'. Got {self.dtype!r} instead.")
        X, y, k = self._prepare(X, y, self.n_outputs)
        fitted: FittedLinear = fit_probe_grid(
            X,
            y,
            None,
            None,
            self.task,
            [C],
            n_outputs=k,
            max_iter=self.max_iter,
            tol=self.tol,
            dtype=np.dtype(self.dtype).type,
            stop=self.stop,
        )["all"]
        if fitted.C_index < 0:
            raise DataError(f"LogisticProbe cannot be fitted: {fitted.skipped[-1]}.")
        self.fit_info_ = fitted
        self.coef_ = fitted.coef_path[0].T.copy()
        self.intercept_ = fitted.intercept_path[0].copy()
        self.n_iter_ = fitted.n_iter
        self.converged_ = bool(fitted.converged[0])
        self._set_fitted(X.shape[1], k)
        return self

    def decision_function(self, X: npt.ArrayLike) -> np.ndarray:
        """Logits, N×K."""
        self._check_fitted()
        return self.fit_info_.decision_function(X)

    def _predict_proba(self, X: np.ndarray) -> np.ndarray:
        return self.fit_info_.predict_proba(X)
