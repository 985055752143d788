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


def stall_ftol(dtype: type | np.dtype, ulps: float = 64.0) -> float:
    """Relative loss decrease below which a problem has stalled at the precision of ``dtype``.

    ``ulps`` × the machine epsilon of the dtype the loss is evaluated in. scikit-learn's lbfgs
    uses 64 for float64 (1.4e-14; float32 gives 7.6e-6): smaller decreases are rounding noise
    of its loss, not progress. A loss summed more precisely can take a smaller factor.
    """
    return ulps * float(np.finfo(dtype).eps)


#: Iterations in a row with a decrease below ``ftol`` after which a problem has stalled: one
#: such step can be an overshoot that the next curvature pair corrects.
STALL_PATIENCE = 3


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

    def line_change(self, idx: np.ndarray) -> np.ndarray:
        """The change the unit step of the prepared line predicts, per problem ``idx`` (the
        "change" test; objectives that only offer the gradient test may raise)."""

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

    def line_change(self, idx: np.ndarray) -> np.ndarray:
        """Max-norm of the step ``d`` itself, per problem (the change in ``x``)."""
        return np.abs(self._line[1][self._slot[idx]]).max(axis=1)

    def grad_norm(self, g: np.ndarray, idx: np.ndarray, tol: float | None = None) -> np.ndarray:
        return np.abs(g).max(axis=1)


@dataclass(frozen=True)
class LBFGSMemory:
    """Each problem's curvature pairs, oldest first (``rho`` 0: an empty slot), and scaling."""

    S: np.ndarray  # (m, history, p)
    Y: np.ndarray  # (m, history, p)
    rho: np.ndarray  # (m, history)
    gamma: np.ndarray  # (m,)

    @classmethod
    def empty(cls, m: int, history: int, p: int) -> LBFGSMemory:
        return cls(np.zeros((m, history, p)), np.zeros((m, history, p)),
                   np.zeros((m, history)), np.ones(m))  # fmt: skip

    def take(self, ids: np.ndarray) -> LBFGSMemory:
        """The memory of the problems ``ids``."""
        return LBFGSMemory(self.S[ids], self.Y[ids], self.rho[ids], self.gamma[ids])


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
    memory: LBFGSMemory | None = None  # each problem's curvature pairs where it stopped


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
    test: str = "gradient",
    memory: LBFGSMemory | None = None,
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
        The tolerance of the convergence test ``test``.
    history : int
        Curvature pairs kept per problem.
    c1 : float
        Armijo sufficient-decrease constant of the backtracking line search.
    ftol : float
        A problem whose relative decrease falls below ``ftol`` :data:`STALL_PATIENCE` times in
        a row (or whose line search finds no acceptable step) is stalled at numerical
        precision and stops iterating (reported as not converged unless the gradient test
        also holds); see :func:`stall_ftol`.
    memory : LBFGSMemory, optional
        Curvature pairs to start from (a previous result's ``memory``, to take problems on
        where they stopped, e.g. with another objective); default none.
    test : {"gradient", "change"}
        "gradient": a problem has converged when ``objective.grad_norm`` of its gradient is
        at most ``tol``. "change": when ``objective.line_change`` of its next line (the
        change the quasi-Newton step predicts, in the units the objective chooses) is at
        most ``tol``; the problem then stays where it is.
    """
    x = np.array(x0, dtype=np.float64)
    m = x.shape[0]
    everyone = np.arange(m)
    f, g = objective.evaluate(x, everyone)
    by_change = test == "change"
    met = np.zeros(m, dtype=bool)  # the change test held (test="change")
    change = np.full(m, np.inf)  # each problem's last predicted change (test="change")
    start = everyone if by_change else everyone[objective.grad_norm(g, everyone, tol) > tol]
    kept = LBFGSMemory.empty(m, history, x.shape[1])
    work = _WorkingSet(start, x, f, g, history, memory, kept)
    it = 0
    for it in range(1, max_iter + 1):
        if work.ids.size == 0:
            it -= 1
            break
        d, slope = work.descent_direction()
        objective.set_line(work.x, d, work.ids)
        if by_change:
            small = _change_test(objective, work.ids, change, it, tol)
            met[work.ids[small]] = True
            if small.any():
                work.retire(~small, x, f, g)
                d, slope = d[~small], slope[~small]
                if work.ids.size == 0:
                    break
        # The solver's change of variables bounds the Hessian by the identity, so the unit
        # step is a majorisation step even before any curvature pair exists.
        step, f_new, failed = _backtrack(objective, work.f, slope, work.ids, c1, max_backtracks)
        moved = ~failed
        x_new, g_new = work.x.copy(), work.g.copy()
        x_new[moved] += step[moved, None] * d[moved]
        if moved.any():
            g_new[moved] = objective.move_to(step[moved], work.ids[moved])
        decrease = (work.f - f_new) / np.maximum(np.abs(work.f), 1.0)
        work.advance(x_new, f_new, g_new, moved)
        work.flat = np.where(decrease > ftol, 0, work.flat + 1)
        keep = moved & (work.flat < STALL_PATIENCE)  # the others stalled at numerical precision
        if not by_change and keep.any():
            keep[keep] = objective.grad_norm(g_new[keep], work.ids[keep], tol) > tol
        work.retire(keep, x, f, g)
    work.retire(np.zeros(work.ids.size, dtype=bool), x, f, g)
    grad_norm = objective.grad_norm(g, everyone)
    converged = met if by_change else grad_norm <= tol
    msg = (
        "converged"
        if converged.all()
        else ("iteration cap reached" if it >= max_iter else "stalled at numerical precision")
    )
    return LBFGSResult(x, f, g, grad_norm, it, converged, msg, kept)


class _WorkingSet:
    """The problems still iterating, packed together, with their curvature histories.

    Finished problems are written back to the caller's arrays and dropped, so every
    per-iteration vector operation costs in proportion to the problems still running.
    """

    def __init__(self, ids, x, f, g, history, memory, kept) -> None:
        self.ids = ids
        self.x, self.f, self.g = x[ids], f[ids], g[ids]
        self.history = history
        self.kept = kept  # where retired problems leave their curvature pairs
        start = (
            LBFGSMemory.empty(ids.size, history, x.shape[1]) if memory is None else memory.take(ids)
        )
        self.S = start.S.transpose(1, 0, 2).copy()
        self.Y = start.Y.transpose(1, 0, 2).copy()
        self.rho = start.rho.T.copy()
        self.gamma = start.gamma.copy()
        self.n_hist = 0 if memory is None else history  # empty slots (rho 0) are skipped
        self.head = 0
        self.flat = np.zeros(ids.size, dtype=int)

    def descent_direction(self) -> tuple[np.ndarray, np.ndarray]:
        """The L-BFGS direction of every problem (steepest descent where it is not a descent
        direction) and its slope."""
        d = -_two_loop(self.g, self.S, self.Y, self.rho, self.gamma, self.n_hist, self.head,
                       self.history)  # fmt: skip
        slope = np.einsum("mp,mp->m", self.g, d)
        bad = slope >= 0
        if bad.any():
            d[bad] = -self.g[bad]
            slope[bad] = -np.einsum("mp,mp->m", self.g[bad], self.g[bad])
        return d, slope

    def advance(self, x_new, f_new, g_new, moved) -> None:
        """Take the new iterates and store the curvature pair of every problem that moved."""
        s_vec, y_vec = x_new - self.x, g_new - self.g
        sy = np.einsum("mp,mp->m", s_vec, y_vec)
        yy = np.einsum("mp,mp->m", y_vec, y_vec)
        good = moved & (sy > 1e-12 * np.maximum(1.0, yy))
        self.S[self.head] = np.where(good[:, None], s_vec, 0.0)
        self.Y[self.head] = np.where(good[:, None], y_vec, 0.0)
        self.rho[self.head] = np.where(good, 1.0 / np.where(good, sy, 1.0), 0.0)
        self.gamma = np.where(good, sy / np.where(good, yy, 1.0), self.gamma)
        self.head = (self.head + 1) % self.history
        self.n_hist = min(self.n_hist + 1, self.history)
        self.x, self.f, self.g = x_new, f_new, g_new

    def retire(self, keep, x, f, g) -> None:
        """Write every problem not in ``keep`` back to ``x, f, g`` and drop it."""
        if keep.all():
            return
        done = self.ids[~keep]
        x[done], f[done], g[done] = self.x[~keep], self.f[~keep], self.g[~keep]
        oldest_first = [(self.head + k) % self.history for k in range(self.history)]
        self.kept.S[done] = self.S[oldest_first][:, ~keep].transpose(1, 0, 2)
        self.kept.Y[done] = self.Y[oldest_first][:, ~keep].transpose(1, 0, 2)
        self.kept.rho[done] = self.rho[oldest_first][:, ~keep].T
        self.kept.gamma[done] = self.gamma[~keep]
        self.ids = self.ids[keep]
        self.x, self.f, self.g = self.x[keep], self.f[keep], self.g[keep]
        self.S, self.Y, self.rho = self.S[:, keep], self.Y[:, keep], self.rho[:, keep]
        self.gamma = self.gamma[keep]
        self.flat = self.flat[keep]


def _change_test(objective, ids, change, it, tol) -> np.ndarray:
    """Which problems ``ids`` pass the change test on this iteration's line.

    ``change`` (m,) holds each problem's last predicted change. The test is evaluated every
    iteration only for problems whose last predicted change was within 30 × ``tol``, and for
    the others every fourth iteration: skipping a test can only delay a stop, never cause one.
    """
    due = ids[(change[ids] <= 30.0 * tol) | (it % 4 == 1)]
    change[due] = objective.line_change(due)
    return change[ids] <= tol


def _backtrack(objective, f, slope, ids, c1, max_backtracks):
    """Armijo backtracking from the unit step on every line; (step, f_new, failed)."""
    step = np.ones(ids.size)
    f_new = f.copy()
    pending = np.ones(ids.size, dtype=bool)
    for _ in range(max_backtracks):
        at = np.flatnonzero(pending)
        f_t = objective.value_at(step[at], ids[at])
        ok = np.isfinite(f_t) & (f_t <= f[at] + c1 * step[at] * slope[at])
        f_new[at[ok]] = f_t[ok]
        pending[at[ok]] = False
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
