"""Batched L-BFGS: many independent smooth problems of the same size, solved in lock-step.

Each problem (one C value of the logistic path) keeps its own curvature history, step size
and convergence flag; all of them share each objective evaluation, which is one pair of
matrix products over the feature matrix. Compared with one L-BFGS run over the
concatenated parameters (what ``scipy.optimize.minimize`` would do with the summed
objective), problems do not slow each other down through a shared line search, and the
per-iteration overhead is a few vectorised numpy operations instead of the L-BFGS-B
machinery for bound constraints that this problem does not have.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

Objective = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class LBFGSResult:
    """Solution of every problem and how the solve went."""

    x: np.ndarray  # (m, p)
    f: np.ndarray  # (m,)
    grad: np.ndarray  # (m, p)
    n_iter: int
    converged: np.ndarray  # (m,) bool: max |grad| <= tol
    message: str


def batched_lbfgs(
    fun: Objective,
    x0: np.ndarray,
    *,
    max_iter: int,
    tol: float,
    history: int = 10,
    c1: float = 1e-4,
    max_backtracks: int = 30,
    ftol: float = 64 * np.finfo(float).eps,
    grad_scale: np.ndarray | None = None,
) -> LBFGSResult:
    """Minimise ``m`` independent problems ``f_i(x_i)`` jointly.

    Parameters
    ----------
    fun : callable
        ``fun(X, idx) -> (f, G)``: the values and gradients of the problems ``idx`` (an int
        index array) at ``X`` of shape (len(idx), p). Only problems still iterating are
        evaluated, so converged ones cost nothing.
    x0 : (m, p) array
        Starting points.
    max_iter : int
        Iteration cap (the same budget for every problem).
    tol : float
        A problem has converged when the max-norm of its gradient is at most ``tol``.
    history : int
        Curvature pairs kept per problem.
    c1 : float
        Armijo sufficient-decrease constant of the backtracking line search.
    ftol : float
        A problem whose relative decrease falls below ``ftol`` is stalled at numerical
        precision and stops iterating (reported as not converged unless the gradient test
        also holds).
    grad_scale : (m, p) array, optional
        The convergence test is ``max |G / grad_scale| <= tol``: with a change of variables
        ``w = s * v`` pass ``s`` to test the gradient in the original variables (the test
        scikit-learn applies), which is stricter where the preconditioning shrinks it.
    """
    x = np.array(x0, dtype=np.float64)
    m, p = x.shape
    inv_scale = None if grad_scale is None else 1.0 / np.asarray(grad_scale, dtype=np.float64)

    def gnorm(G: np.ndarray) -> np.ndarray:
        return np.abs(G if inv_scale is None else G * inv_scale).max(axis=1)

    f, g = fun(x, np.arange(m))
    S = np.zeros((history, m, p))
    Y = np.zeros((history, m, p))
    rho = np.zeros((history, m))
    gamma = np.ones(m)
    active = gnorm(g) > tol
    n_hist = 0
    head = 0
    it = 0
    for it in range(1, max_iter + 1):
        if not active.any():
            it -= 1
            break
        d = -_two_loop(g, S, Y, rho, gamma, n_hist, head, history)
        slope = np.einsum("mp,mp->m", g, d)
        bad = slope >= 0  # not a descent direction: restart from steepest descent
        if bad.any():
            d[bad] = -g[bad]
            slope[bad] = -np.einsum("mp,mp->m", g[bad], g[bad])
        d[~active] = 0.0
        # The solver's change of variables bounds the Hessian by the identity, so the unit
        # step is a majorisation step even before any curvature pair exists.
        step = np.where(active, 1.0, 0.0)
        x_new, f_new, g_new = x.copy(), f.copy(), g.copy()
        pending = active.copy()
        for _ in range(max_backtracks):
            idx = np.flatnonzero(pending)
            trial = x[idx] + step[idx, None] * d[idx]
            f_t, g_t = fun(trial, idx)
            ok = np.isfinite(f_t) & (f_t <= f[idx] + c1 * step[idx] * slope[idx])
            acc = idx[ok]
            x_new[acc], f_new[acc], g_new[acc] = trial[ok], f_t[ok], g_t[ok]
            pending[acc] = False
            if not pending.any():
                break
            step = np.where(pending, step * 0.5, step)
        failed = pending  # no acceptable step: stalled at precision
        s_vec = x_new - x
        y_vec = g_new - g
        sy = np.einsum("mp,mp->m", s_vec, y_vec)
        good = (
            active & ~failed & (sy > 1e-12 * np.maximum(1.0, np.einsum("mp,mp->m", y_vec, y_vec)))
        )
        S[head], Y[head] = np.where(good[:, None], s_vec, 0.0), np.where(good[:, None], y_vec, 0.0)
        rho[head] = np.where(good, 1.0 / np.where(good, sy, 1.0), 0.0)
        yy = np.einsum("mp,mp->m", y_vec, y_vec)
        gamma = np.where(good, sy / np.where(good, yy, 1.0), gamma)
        head = (head + 1) % history
        n_hist = min(n_hist + 1, history)
        decrease = (f - f_new) / np.maximum(np.abs(f), 1.0)
        x, f, g = x_new, f_new, g_new
        stalled = active & (failed | (decrease <= ftol))
        active &= ~stalled
        active &= gnorm(g) > tol
    converged = gnorm(g) <= tol
    msg = (
        "converged"
        if converged.all()
        else ("iteration cap reached" if it >= max_iter else "stalled at numerical precision")
    )
    return LBFGSResult(x, f, g, it, converged, msg)


def _two_loop(
    g: np.ndarray,
    S: np.ndarray,
    Y: np.ndarray,
    rho: np.ndarray,
    gamma: np.ndarray,
    n_hist: int,
    head: int,
    history: int,
) -> np.ndarray:
    """H·g by the L-BFGS two-loop recursion, per problem (entries with rho = 0 are skipped)."""
    q = g.copy()
    order = [(head - 1 - k) % history for k in range(n_hist)]  # newest first
    alphas = []
    for i in order:
        a = rho[i] * np.einsum("mp,mp->m", S[i], q)
        q -= a[:, None] * Y[i]
        alphas.append(a)
    r = gamma[:, None] * q
    for i, a in zip(reversed(order), reversed(alphas), strict=True):
        b = rho[i] * np.einsum("mp,mp->m", Y[i], r)
        r += (a - b)[:, None] * S[i]
    return r
