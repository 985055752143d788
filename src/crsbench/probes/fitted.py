"""The record of one subset's fitted C path: :class:`FittedLinear`."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from scipy.special import expit, softmax

from crsbench.core.validation import check_features


def link_probabilities(logits: np.ndarray, task: str) -> np.ndarray:
    """Probabilities from logits whose last axis is the classes / labels: softmax
    (multiclass) or one sigmoid per label (multilabel)."""
    return softmax(logits, axis=-1) if task == "multiclass" else expit(logits)


@dataclass(frozen=True)
class FittedLinear:
    """One subset's fitted C path and the chosen model (weights in the original feature space).

    Attributes
    ----------
    key : hashable
        The subset key given to :func:`fit_probe_grid`.
    task : str
    Cs : numpy.ndarray
        The C grid, shape (m,).
    C_index : int
        Index of the chosen C (best validation macro-AUROC; -1 when nothing could be fitted).
    coef_path, intercept_path : numpy.ndarray
        Shapes (m, d, K) and (m, K): the model for every C. Absent classes get intercept −inf.
    val_auroc : numpy.ndarray
        Validation macro-AUROC per C (NaN when undefined or when no validation set was given).
    n_iter : int
        L-BFGS iterations of the joint solve.
    converged : numpy.ndarray
        Per C: the stopping rule's test held (``stop`` of :func:`fit_probe_grid`) within
        ``max_iter``.
    grad_norm : numpy.ndarray
        Per C: the gradient max-norm (standardised features' weights and biases) at the end.
    n_rows : int
        Training rows used.
    skipped : dict[int, str]
        Class / label index → why it was not fitted ("needs >= 2 classes", ...).
    flags : tuple[str, ...]
        Warnings about the fit (constant features, collapsed features, no convergence).
    seconds : float
        Wall time of this subset's fit (shared subsets report the same time).
    """

    key: Hashable
    task: str
    Cs: np.ndarray
    C_index: int
    coef_path: np.ndarray
    intercept_path: np.ndarray
    val_auroc: np.ndarray
    n_iter: int
    converged: np.ndarray
    grad_norm: np.ndarray
    n_rows: int
    skipped: dict[int, str] = field(default_factory=dict)
    flags: tuple[str, ...] = ()
    seconds: float = 0.0

    @property
    def C(self) -> float:
        """The chosen C (NaN for a skipped subset)."""
        return float(self.Cs[self.C_index]) if self.C_index >= 0 else float("nan")

    @property
    def chosen_val_auroc(self) -> float:
        """Validation macro-AUROC of the chosen C (NaN when undefined or nothing was fitted)."""
        return float(self.val_auroc[self.C_index]) if self.C_index >= 0 else float("nan")

    @property
    def coef(self) -> np.ndarray:
        """(d, K) weights of the chosen C."""
        return self.coef_path[self.C_index]

    @property
    def intercept(self) -> np.ndarray:
        """(K,) biases of the chosen C."""
        return self.intercept_path[self.C_index]

    def decision_function(self, X: npt.ArrayLike, C_index: int | None = None) -> np.ndarray:
        """Logits ``X @ coef + intercept`` for the chosen (or the given) C."""
        i = self.C_index if C_index is None else C_index
        X = check_features(X, "X", self.coef_path.shape[1])
        return X.astype(np.float64) @ self.coef_path[i] + self.intercept_path[i]

    def predict_proba(self, X: npt.ArrayLike, C_index: int | None = None) -> np.ndarray:
        """N×K probabilities (multiclass rows sum to one; multilabel independent sigmoids)."""
        return link_probabilities(self.decision_function(X, C_index), self.task)


def skipped_fit(key, task, Cs, d, K, n_rows, reason) -> FittedLinear:
    m = Cs.size
    icpt = np.zeros((m, K))
    return FittedLinear(
        key,
        task,
        Cs,
        -1,
        np.zeros((m, d, K)),
        icpt,
        np.full(m, np.nan),
        0,
        np.zeros(m, dtype=bool),
        np.full(m, np.nan),
        n_rows,
        {-1: reason},
        (f"skipped: {reason}",),
    )
