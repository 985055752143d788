"""One row subset's fit: every C of the grid solved jointly, weights folded back to the features.

:func:`fit_subset` is what :func:`crsbench.probes.fit_probe_grid` runs for each distinct subset
(possibly several at once, in threads): it standardises and rotates the rows, solves the C path
(:mod:`crsbench.probes._solver`), folds the standardisation into the weights and computes the
validation macro-AUROC of every C. Choosing C by it is left to the caller.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from crsbench.metrics import macro_auroc
from crsbench.probes._basis import build_basis
from crsbench.probes._solver import SolveResult, solve_logistic_path
from crsbench.probes.fitted import link_probabilities


@dataclass(frozen=True)
class SubsetFit:
    """The C path of one subset before C is chosen (``skip`` says why there is none)."""

    n_rows: int
    seconds: float
    skip: str | None = None
    coef_path: np.ndarray | None = None  # (m, d, K)
    intercept_path: np.ndarray | None = None  # (m, K)
    solve: SolveResult | None = None
    skipped: dict[int, str] | None = None
    flags: tuple[str, ...] = ()
    val_auroc: np.ndarray | None = None  # (m,) NaN where undefined or without validation


def fit_subset(X, Y, idx, val, task, Cs, max_iter, tol, dtype, stop) -> SubsetFit:
    """Fit the rows ``idx`` of ``X`` (targets ``Y``) for every C, with the validation
    macro-AUROC of every C on ``val`` = (X_val, y_val), or None (no validation set, or one
    where the macro-AUROC is undefined: NaN for every C; the caller checks, so that no
    warning is raised here, possibly in a thread)."""
    start = time.perf_counter()
    try:
        coef_path, icpt_path, res, skipped, flags = _fit_rows(
            X[idx], Y[idx], task, Cs, max_iter, tol, dtype, stop
        )
    except _Skip as skip:
        return SubsetFit(int(idx.size), time.perf_counter() - start, skip=str(skip))
    val_auroc = np.full(len(Cs), np.nan)
    if val is not None:
        proba = _path_proba(val[0], coef_path, icpt_path, task)
        val_auroc = np.array([macro_auroc(val[1], proba[:, c], task) for c in range(len(Cs))])
    return SubsetFit(int(idx.size), time.perf_counter() - start, None, coef_path, icpt_path,
                     res, skipped, flags, val_auroc)  # fmt: skip


def _path_proba(Xv, coef_path, icpt_path, task) -> np.ndarray:
    """Probabilities of every C's model on ``Xv``, from one matrix product: (n_val, m, K)."""
    m, d, K = coef_path.shape
    flat = coef_path.transpose(1, 0, 2).reshape(d, m * K)
    return link_probabilities((Xv.astype(np.float64) @ flat).reshape(-1, m, K) + icpt_path[None],
                              task)  # fmt: skip


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
