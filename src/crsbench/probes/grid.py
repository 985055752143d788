"""The batched engine: every C × every label subset of one cell, picked by validation AUROC.

For each distinct row subset (a (fraction, seed) pair; identical index arrays are solved once
and shared), the rows are standardised with their own statistics, rotated onto their principal
axes, and the whole C grid is solved as one joint preconditioned L-BFGS problem (see
:mod:`crsbench.probes._solver`). C is then chosen per subset by validation macro-AUROC (ties go
to the smallest C). Weights are returned in the original feature space, with the
standardisation folded in, so ``X @ coef + intercept`` gives the logits.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from scipy.special import expit, softmax

from crsbench.core.errors import DataError
from crsbench.core.types import check_task
from crsbench.core.validation import check_features, check_targets
from crsbench.metrics import macro_auroc
from crsbench.metrics._checks import UndefinedMetricWarning
from crsbench.probes._basis import build_basis
from crsbench.probes._solver import solve_logistic_path
from crsbench.protocol import C_GRID, LOGISTIC_MAX_ITER, LOGISTIC_STOP, STOP_RULES

DEFAULT_MAX_ITER = LOGISTIC_MAX_ITER
#: The estimators' default tolerance (scikit-learn's); the protocol's budget
#: (:data:`crsbench.protocol.LOGISTIC_TOL`) is passed by the pipeline from the config.
DEFAULT_TOL = 1e-4


def linear_proba(X: np.ndarray, coef: np.ndarray, intercept: np.ndarray, task: str) -> np.ndarray:
    """Probabilities of a folded linear model: softmax (multiclass) or sigmoids (multilabel)."""
    logits = np.asarray(X, dtype=np.float64) @ coef + intercept
    return softmax(logits, axis=1) if task == "multiclass" else expit(logits)


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
        logits = self.decision_function(X, C_index)
        return softmax(logits, axis=1) if self.task == "multiclass" else expit(logits)


def _as_index(key: Hashable, idx: object, n: int) -> np.ndarray:
    arr = np.asarray(idx)
    if arr.dtype == bool:
        if arr.shape != (n,):
            raise DataError(
                f"subset {key!r} boolean mask must have length {n}. Got {arr.shape} instead."
            )
        arr = np.flatnonzero(arr)
    if arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iu":
        raise DataError(
            f"subset {key!r} must be a non-empty 1-D integer index array. Got {arr!r:.60} instead."
        )
    if arr.min() < 0 or arr.max() >= n:
        raise DataError(
            f"subset {key!r} indices must be in [0, {n - 1}]. Got range [{arr.min()}, {arr.max()}] instead."
        )
    return arr.astype(np.int64)


def _fit_rows(X, Y, task, Cs, max_iter, tol, dtype, stop):
    """Fit one row subset for every C; return coef_path, intercept_path, solve info, notes."""
    n, d = X.shape
    K = Y.shape[1]
    m = len(Cs)
    skipped: dict[int, str] = {}
    flags: list[str] = []
    if task == "multiclass":
        counts = Y.sum(axis=0)
        fit_cols = np.flatnonzero(counts > 0)
        for j in np.flatnonzero(counts == 0):
            skipped[int(j)] = "class absent from the training rows"
        if fit_cols.size < 2:
            raise _Skip(f"needs >= 2 classes in the training rows; got {fit_cols.size}")
    else:
        present = ~np.isnan(Y)
        n_pos = np.nansum(Y, axis=0)
        n_neg = present.sum(axis=0) - n_pos
        ok = (n_pos > 0) & (n_neg > 0)
        fit_cols = np.flatnonzero(ok)
        for j in np.flatnonzero(~ok):
            skipped[int(j)] = (
                "needs >= 2 classes (no labelled rows)"
                if present[:, j].sum() == 0
                else (
                    "needs >= 2 classes (no positives)"
                    if n_pos[j] == 0
                    else "needs >= 2 classes (no negatives)"
                )
            )
        if fit_cols.size == 0:
            raise _Skip("needs >= 2 classes for at least one label")
    basis, Z = build_basis(X, dtype)
    if basis.n_constant:
        flags.append(f"{basis.n_constant} constant feature columns")
    if Z.shape[1] == 0:
        flags.append("all features constant (collapsed encoder): intercept-only model")
    res = solve_logistic_path(
        Z, basis.eig, basis.rot, Y[:, fit_cols], Cs, task, max_iter, tol, stop
    )
    coef_path = np.zeros((m, d, K))
    coef_fit = (
        np.einsum("dr,mrk->mdk", basis.rot.astype(np.float64), res.W) / basis.scale[None, :, None]
    )
    coef_path[:, :, fit_cols] = coef_fit
    intercept_path = np.empty((m, K))
    intercept_path[:, fit_cols] = res.b - np.einsum("d,mdk->mk", basis.mean, coef_fit)
    for j in skipped:
        if task == "multiclass":
            intercept_path[:, j] = -np.inf
        else:
            col = Y[:, j][~np.isnan(Y[:, j])]
            rate = float(np.clip(col.mean(), 1e-6, 1 - 1e-6)) if col.size else 0.5
            intercept_path[:, j] = np.log(rate / (1 - rate))
    if not res.converged.all():
        bad = np.flatnonzero(~res.converged)
        flags.append(
            f"not converged for {bad.size} of {m} C values within max_iter={max_iter} "
            f"(stopping rule {stop!r} at tol={tol:g}; largest gradient "
            f"{res.grad_norm.max():.2e}; {res.message})"
        )
    return coef_path, intercept_path, res, skipped, tuple(flags)


class _Skip(Exception):
    """Internal: this subset cannot be fitted (reason in the message)."""


def _one_hot(y: np.ndarray, K: int) -> np.ndarray:
    Y = np.zeros((y.size, K))
    Y[np.arange(y.size), y] = 1.0
    return Y


def fit_probe_grid(
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_val: np.ndarray | None,
    y_val: np.ndarray | None,
    task: str,
    Cs: np.ndarray | Sequence[float] = C_GRID,
    subsets: Mapping[Hashable, np.ndarray] | None = None,
    *,
    n_outputs: int | None = None,
    max_iter: int = DEFAULT_MAX_ITER,
    tol: float = DEFAULT_TOL,
    dtype: type = np.float32,
    stop: str = LOGISTIC_STOP,
) -> dict[Hashable, FittedLinear]:
    """Fit L2 logistic probes for every C × every row subset; pick C per subset on validation.

    Parameters
    ----------
    X_train : (n, d) float array
        Training features (finite; NaN/Inf raise :class:`~crsbench.core.errors.DataError`).
    y_train : array
        Class indices (multiclass) or an n×L 0/1/NaN matrix (multilabel).
    X_val, y_val : arrays or None
        Validation set for choosing C by macro-AUROC. ``None`` keeps the first C.
    task : {"multiclass", "multilabel"}
    Cs : sequence of float, default :data:`crsbench.protocol.C_GRID`
        Inverse regularisation strengths (scikit-learn's convention).
    subsets : mapping key → index array (or boolean mask), optional
        Training rows of each fit, e.g. ``{(fraction, seed): rows}``; default all rows.
    n_outputs : int, optional
        Number of classes (multiclass); default ``max(y) + 1`` over train and validation.
    max_iter, tol : int, float
        The budget, the same for every encoder: L-BFGS iterations and the stopping rule's
        tolerance.
    stop : {"probabilities", "gradient"}, default "probabilities"
        The stopping rule of each C's fit. "probabilities": the quasi-Newton step (the
        solver's estimate of the way to the optimum) moves no fitted row's probability by
        more than ``tol`` — a test in the units the probe is used in, scaled to the problem.
        "gradient": scikit-learn's lbfgs test, the gradient max-norm (standardised features'
        weights and biases) at most ``tol``; it bounds the gradient, not the probabilities,
        and at weak penalties (large C) leaves them far from the optimum's.
    dtype : numpy dtype, default float32
        Working precision of the two matrix products per iteration (logits between
        iterations and every loss are float64 in both).

    Returns
    -------
    dict
        Subset key → :class:`FittedLinear`. A subset that cannot be fitted (one class only)
        still gets an entry, with ``C_index = -1`` and the reason in ``skipped[-1]``.
    """
    check_task(task)
    Cs = np.asarray(Cs, dtype=np.float64)
    if Cs.ndim != 1 or Cs.size == 0 or not np.all(np.isfinite(Cs)) or np.any(Cs <= 0):
        raise ValueError(
            f"Cs must be a non-empty 1-D array of positive floats. Got {Cs!r} instead."
        )
    if not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer. Got {max_iter!r} instead.")
    if not tol > 0:
        raise ValueError(f"tol must be positive. Got {tol!r} instead.")
    if stop not in STOP_RULES:
        raise ValueError(f"stop must be one of {list(STOP_RULES)}. Got {stop!r} instead.")
    X = check_features(X_train, "X_train")
    n, d = X.shape
    if task == "multiclass":
        y_tr = check_targets(y_train, task, n, "y_train")
        K = n_outputs
        if K is None:
            K = int(y_tr.max()) + 1
            if y_val is not None:
                K = max(K, int(np.max(check_targets(y_val, task, len(y_val), "y_val"))) + 1)
        y_tr = check_targets(y_train, task, n, "y_train", K)
        Y = _one_hot(y_tr, K)
    else:
        Y = check_targets(y_train, task, n, "y_train", n_outputs)
        K = Y.shape[1]
    Xv = yv = None
    if X_val is not None and y_val is not None:
        Xv = check_features(X_val, "X_val", d)
        yv = check_targets(y_val, task, Xv.shape[0], "y_val", K)
    if subsets is None:
        subsets = {"all": np.arange(n)}
    results: dict[Hashable, FittedLinear] = {}
    cache: dict[bytes, FittedLinear] = {}
    for key, raw in subsets.items():
        idx = _as_index(key, raw, n)
        sig = np.sort(idx).tobytes()
        if sig in cache:
            results[key] = _rekey(cache[sig], key)
            continue
        start = time.perf_counter()
        try:
            coef_path, icpt_path, res, skipped, flags = _fit_rows(
                X[idx], Y[idx], task, Cs, max_iter, tol, dtype, stop
            )
        except _Skip as skip:
            fitted = _skipped(key, task, Cs, d, K, idx.size, str(skip))
        else:
            val = _val_auroc(Xv, yv, coef_path, icpt_path, task)
            c_idx = int(np.nanargmax(val)) if np.isfinite(val).any() else 0
            fitted = FittedLinear(
                key,
                task,
                Cs,
                c_idx,
                coef_path,
                icpt_path,
                val,
                res.n_iter,
                res.converged,
                res.grad_norm,
                int(idx.size),
                skipped,
                flags,
                time.perf_counter() - start,
            )
        cache[sig] = fitted
        results[key] = fitted
    return results


def _val_auroc(Xv, yv, coef_path, icpt_path, task) -> np.ndarray:
    """Validation macro-AUROC of every C, from one matrix product over all C values."""
    m, d, K = coef_path.shape
    if Xv is None:
        return np.full(m, np.nan)
    logits = (Xv.astype(np.float64) @ coef_path.transpose(1, 0, 2).reshape(d, m * K)).reshape(
        -1, m, K
    ) + icpt_path[None]
    probs = softmax(logits, axis=2) if task == "multiclass" else expit(logits)
    val = np.full(m, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        for c in range(m):
            val[c] = macro_auroc(yv, probs[:, c, :], task)
    return val


def _rekey(fitted: FittedLinear, key: Hashable) -> FittedLinear:
    from dataclasses import replace

    return replace(fitted, key=key)


def _skipped(key, task, Cs, d, K, n_rows, reason) -> FittedLinear:
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
