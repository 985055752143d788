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
from typing import Protocol

import numpy as np

Objective = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def stall_ftol(dtype: type | np.dtype) -> float:
    """Relative loss decrease below which a problem has stalled at the precision of ``dtype``.

    64 × the machine epsilon of the dtype the loss is evaluated in (scikit-learn's lbfgs uses
    the same factor for float64: 1.4e-14; float32 gives 7.6e-6). Smaller decreases are
    rounding noise of the loss, not progress.
    """
    return 64.0 * float(np.finfo(dtype).eps)


class LineObjective(Protocol):
    """What :func:`batched_lbfgs` asks of the problems (``idx``: int index array of problems)."""

    def evaluate(self, x: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Values (len(idx),) and gradients (len(idx), p) at ``x``."""

    def set_line(self, x: np.ndarray, d: np.ndarray, idx: np.ndarray) -> None:
        """Prepare the search lines ``x + step · d`` of the problems ``idx``."""

    def value_at(self, step: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Values at ``x + step · d`` of a subset of the prepared problems."""

    def move_to(self, step: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Commit ``x + step · d`` for the problems ``idx``; gradients there."""

    def grad_norm(self, g: np.ndarray, idx: np.ndarray, tol: float | None = None) -> np.ndarray:
        """The quantity the convergence test compares with ``tol``, per problem (with ``tol``
        given, it may be a bound that lies on the same side of ``tol``)."""


class FunctionObjective:
    """A :class:`LineObjective` over a plain ``fun(X, idx) -> (f, G)``; max-norm gradient test."""

    def __init__(self, fun: Objective) -> None:
        self.fun = fun
        self._line: tuple[np.ndarray, np.ndarray, np.ndarray] = (np.empty(0),) * 3
        self._slot = np.empty(0, dtype=int)

    def evaluate(self, x: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.fun(x, idx)

    def set_line(self, x: np.ndarray, d: np.ndarray, idx: np.ndarray) -> None:
        self._slot = np.full(int(idx.max(initial=-1)) + 1, -1)
        self._slot[idx] = np.arange(idx.size)
        self._line = (x, d, np.zeros_like(d))

    def value_at(self, step: np.ndarray, idx: np.ndarray) -> np.ndarray:
        x, d, grads = self._line
        s = self._slot[idx]
        f, g = self.fun(x[s] + step[:, None] * d[s], idx)
        grads[s] = g  # the accepted trial is the last one evaluated for each problem
        return f

    def move_to(self, step: np.ndarray, idx: np.ndarray) -> np.ndarray:
        return self._line[2][self._slot[idx]]

    def grad_norm(self, g: np.ndarray, idx: np.ndarray, tol: float | None = None) -> np.ndarray:
        return np.abs(g).max(axis=1)


@dataclass(frozen=True)
class LBFGSResult:
    """Solution of every problem and how the solve went."""

    x: np.ndarray  # (m, p)
    f: np.ndarray  # (m,)
    grad: np.ndarray  # (m, p)
    grad_norm: np.ndarray  # (m,) the objective's grad_norm at the end
    n_iter: int
    converged: np.ndarray  # (m,) bool: grad_norm <= tol
    message: str


def batched_lbfgs(
    objective: LineObjective,
    x0: np.ndarray,
    *,
    max_iter: int,
    tol: float,
    history: int = 10,
    c1: float = 1e-4,
    max_backtracks: int = 30,
    ftol: float = stall_ftol(np.float64),
) -> LBFGSResult:
    """Minimise ``m`` independent problems ``f_i(x_i)`` jointly.

    Parameters
    ----------
    objective : LineObjective
        The problems (:class:`FunctionObjective` wraps a plain ``fun(X, idx)``). Only
        problems still iterating are evaluated, so converged ones cost nothing.
    x0 : (m, p) array
        Starting points.
    max_iter : int
        Iteration cap (the same budget for every problem).
    tol : float
        A problem has converged when ``objective.grad_norm`` of its gradient is at most ``tol``.
    history : int
        Curvature pairs kept per problem.
    c1 : float
        Armijo sufficient-decrease constant of the backtracking line search.
    ftol : float
        A problem whose relative decrease falls below ``ftol`` is stalled at numerical
        precision and stops iterating (reported as not converged unless the gradient test
        also holds); see :func:`stall_ftol`.
    """
    x = np.array(x0, dtype=np.float64)
    m, p = x.shape
    everyone = np.arange(m)
    f, g = objective.evaluate(x, everyone)
    S = np.zeros((history, m, p))
    Y = np.zeros((history, m, p))
    rho = np.zeros((history, m))
    gamma = np.ones(m)
    active = objective.grad_norm(g, everyone, tol) > tol
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
        idx = np.flatnonzero(active)
        objective.set_line(x[idx], d[idx], idx)
        # The solver's change of variables bounds the Hessian by the identity, so the unit
        # step is a majorisation step even before any curvature pair exists.
        step, f_new, failed = _backtrack(objective, f, slope, active, c1, max_backtracks)
        moved = np.flatnonzero(active & ~failed)
        x_new, g_new = x.copy(), g.copy()
        if moved.size:
            x_new[moved] += step[moved, None] * d[moved]
            g_new[moved] = objective.move_to(step[moved], moved)
        s_vec = x_new - x
        y_vec = g_new - g
        sy = np.einsum("mp,mp->m", s_vec, y_vec)
        yy = np.einsum("mp,mp->m", y_vec, y_vec)
        good = active & ~failed & (sy > 1e-12 * np.maximum(1.0, yy))
        S[head], Y[head] = np.where(good[:, None], s_vec, 0.0), np.where(good[:, None], y_vec, 0.0)
        rho[head] = np.where(good, 1.0 / np.where(good, sy, 1.0), 0.0)
        gamma = np.where(good, sy / np.where(good, yy, 1.0), gamma)
        head = (head + 1) % history
        n_hist = min(n_hist + 1, history)
        decrease = (f - f_new) / np.maximum(np.abs(f), 1.0)
        x, f, g = x_new, f_new, g_new
        stalled = active & (failed | (decrease <= ftol))
        active &= ~stalled
        active[moved] &= objective.grad_norm(g[moved], moved, tol) > tol
    grad_norm = objective.grad_norm(g, everyone)
    converged = grad_norm <= tol
    msg = (
        "converged"
        if converged.all()
        else ("iteration cap reached" if it >= max_iter else "stalled at numerical precision")
    )
    return LBFGSResult(x, f, g, grad_norm, it, converged, msg)


def _backtrack(objective, f, slope, active, c1, max_backtracks):
    """Armijo backtracking from the unit step on every active line; (step, f_new, failed)."""
    step = np.where(active, 1.0, 0.0)
    f_new = f.copy()
    pending = active.copy()
    for _ in range(max_backtracks):
        idx = np.flatnonzero(pending)
        f_t = objective.value_at(step[idx], idx)
        ok = np.isfinite(f_t) & (f_t <= f[idx] + c1 * step[idx] * slope[idx])
        f_new[idx[ok]] = f_t[ok]
        pending[idx[ok]] = False
        if not pending.any():
            break
        step = np.where(pending, step * 0.5, step)
    return step, f_new, pending  # still pending: no acceptable step, stalled at precision


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
