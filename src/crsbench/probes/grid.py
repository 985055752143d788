"""The batched engine: every C × every label subset of one cell, picked by validation AUROC.

For each distinct row subset (a (fraction, seed) pair; identical index arrays are solved once
and shared), the rows are standardised with their own statistics, rotated onto their principal
axes, and the whole C grid is solved as one joint preconditioned L-BFGS problem (see
:mod:`crsbench.probes._solver`). C is then chosen per subset by validation macro-AUROC (ties go
to the smallest C). Weights are returned in the original feature space, with the
standardisation folded in, so ``X @ coef + intercept`` gives the logits.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np

from crsbench.core.errors import DataError
from crsbench.core.types import check_task
from crsbench.core.validation import check_features, check_targets
from crsbench.core.workers import blas_thread_limit, blas_threads
from crsbench.metrics import macro_auroc
from crsbench.metrics._checks import UndefinedMetricWarning
from crsbench.probes._fit_rows import SubsetFit, fit_subset
from crsbench.probes.fitted import FittedLinear, link_probabilities, skipped_fit
from crsbench.protocol import C_GRID, LOGISTIC_MAX_ITER, LOGISTIC_STOP, STOP_RULES

DEFAULT_MAX_ITER = LOGISTIC_MAX_ITER
#: The estimators' default tolerance (scikit-learn's); the protocol's budget
#: (:data:`crsbench.protocol.LOGISTIC_TOL`) is passed by the pipeline from the config.
DEFAULT_TOL = 1e-4


def linear_proba(X: np.ndarray, coef: np.ndarray, intercept: np.ndarray, task: str) -> np.ndarray:
    """Probabilities of a folded linear model: softmax (multiclass) or sigmoids (multilabel)."""
    return link_probabilities(np.asarray(X, dtype=np.float64) @ coef + intercept, task)


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
    threads: int | None = None,
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
    threads : int, optional
        Distinct subsets fitted at once, each in its own thread, largest first; the BLAS
        threads allowed here are shared among them (a run's worker process allows one, the
        protocol's ``PROBE_BLAS_THREADS``: its fits are then one at a time). Default: as many
        as the BLAS threads allowed. On one BLAS thread a fit is the same whatever
        ``threads``; a threaded BLAS may sum in another order.

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
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)
                                or threads < 1):  # fmt: skip
        raise ValueError(f"threads must be a positive integer. Got {threads!r} instead.")
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
    groups = _distinct_subsets(subsets, n)
    val = (Xv, yv) if Xv is not None and _auroc_defined(yv, task, K) else None
    fits = _fit_all(groups, X, Y, val, task, Cs, max_iter, tol, dtype, stop, threads)
    results: dict[Hashable, FittedLinear] = {}
    for (keys, _), fit in zip(groups, fits, strict=True):
        fitted = _chosen(keys[0], fit, Cs, task, d, K)
        for key in keys:
            results[key] = fitted if key == keys[0] else replace(fitted, key=key)
    return {key: results[key] for key in subsets}


def _distinct_subsets(subsets: Mapping[Hashable, object], n: int):
    """The subset keys grouped by their rows, each group with the rows of its first key
    (identical index arrays are fitted once): a list of (keys, rows)."""
    groups: dict[bytes, tuple[list[Hashable], np.ndarray]] = {}
    for key, raw in subsets.items():
        idx = _as_index(key, raw, n)
        groups.setdefault(np.sort(idx).tobytes(), ([], idx))[0].append(key)
    return list(groups.values())


def _fit_all(groups, X, Y, val, task, Cs, max_iter, tol, dtype, stop, threads) -> list[SubsetFit]:
    """Fit every group's rows, largest first, ``threads`` at a time, each on its share of the
    BLAS threads allowed here; the fits in the order of ``groups``."""
    order = sorted(range(len(groups)), key=lambda g: -groups[g][1].size)

    def fit(g: int) -> SubsetFit:
        return fit_subset(X, Y, groups[g][1], val, task, Cs, max_iter, tol, dtype, stop)

    allowed = blas_threads()
    workers = max(1, min(allowed if threads is None else threads, len(groups)))
    with blas_thread_limit(max(1, allowed // workers)):
        if workers == 1:
            fits = [fit(g) for g in order]
        else:
            with ThreadPoolExecutor(workers) as pool:
                fits = list(pool.map(fit, order))
    by_group = dict(zip(order, fits, strict=True))
    return [by_group[g] for g in range(len(groups))]


def _chosen(key, fit: SubsetFit, Cs, task, d, K) -> FittedLinear:
    """The record of one subset's path, C chosen by validation macro-AUROC (ties: smallest C)."""
    if fit.skip is not None:
        return skipped_fit(key, task, Cs, d, K, fit.n_rows, fit.skip)
    assert fit.solve is not None and fit.coef_path is not None and fit.intercept_path is not None
    assert fit.val_auroc is not None
    val = fit.val_auroc
    c_idx = int(np.nanargmax(val)) if np.isfinite(val).any() else 0
    return FittedLinear(key, task, Cs, c_idx, fit.coef_path, fit.intercept_path, val,
                        fit.solve.n_iter, fit.solve.converged, fit.solve.grad_norm, fit.n_rows,
                        fit.skipped or {}, fit.flags, fit.seconds)  # fmt: skip


def _auroc_defined(yv, task, K) -> bool:
    """Whether the validation macro-AUROC is defined (some column has both classes): it then
    is for every model, and computing it raises no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return bool(np.isfinite(macro_auroc(yv, np.zeros((len(yv), K)), task)))
