"""Damped Newton on a batch of independent small problems, one Armijo step length each.

The recalibration's CV selection fits one calibrator per (grid point, fold): a hundred or so
problems of 2 to 72 parameters on ~100 rows, where a per-fit solver spends its time in Python
and scipy overhead. :func:`newton_batch` runs the same damped Newton iteration as
:func:`crsbench.calibration.dirichlet._newton` (exact Hessian, Armijo backtracking that halves
the step until ``f(θ + t·s) ≤ f(θ) + 1e-4·t·gᵀs + 1e-14·|f(θ)|`` or ``t < 1e-10``, stop when
the largest gradient entry is below ``gtol``) on every problem at once: the objective, its
gradient and Hessian are evaluated for the still-active problems in one vectorised call, the
Newton systems are solved with one batched ``np.linalg.solve``, each problem keeps its own
step length and leaves the batch once converged. Each problem follows the iterates a solo run
would (up to float rounding of the batched sums).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

#: ``value(theta, idx) -> (f, state)``: objective of problems ``idx`` at ``theta`` (b, P);
#: ``state`` (b, ...) is whatever :data:`Derivatives` reuses (e.g. the logits).
Value = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
#: ``derivatives(theta, state, idx) -> (g, H)``: gradient (b, P) and Hessian (b, P, P).
Derivatives = Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class BatchObjective:
    """A batch of ``n_problems`` smooth objectives sharing one parameter size.

    Attributes
    ----------
    value : callable
        ``value(theta, idx) -> (f, state)`` for the problems ``idx``.
    derivatives : callable
        ``derivatives(theta, state, idx) -> (g, H)`` from ``value``'s ``state``.
    """

    value: Value
    derivatives: Derivatives


def newton_batch(
    objective: BatchObjective,
    theta0: np.ndarray,
    gtol: float,
    max_iter: int,
    eligible: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Minimise every problem of the batch by damped Newton from ``theta0``.

    Parameters
    ----------
    objective : BatchObjective
    theta0 : ndarray (B, P)
        Starting point of each problem.
    gtol : float
        A problem has converged when ``max |g| < gtol`` at the start of an iteration.
    max_iter : int
        Iterations (gradient checks) per problem; one not converged by then is reported so.
    eligible : ndarray of bool (B,), optional
        Problems to solve; the others keep ``theta0`` and are reported not converged.

    Returns
    -------
    theta : ndarray (B, P)
    converged : ndarray of bool (B,)
    """
    theta = np.array(theta0, dtype=np.float64)
    B = theta.shape[0]
    converged = np.zeros(B, dtype=bool)
    active = np.arange(B) if eligible is None else np.flatnonzero(eligible)
    if active.size == 0:
        return theta, converged
    f, state = objective.value(theta[active], active)
    for _ in range(max_iter):
        g, H = objective.derivatives(theta[active], state, active)
        done = np.abs(g).max(axis=1) < gtol
        converged[active[done]] = True
        keep = ~done
        active, g, H, f, state = active[keep], g[keep], H[keep], f[keep], state[keep]
        if active.size == 0:
            break
        step = -np.linalg.solve(H, g[:, :, None])[:, :, 0]
        t, f, state = _armijo(objective, theta[active], step, (g * step).sum(axis=1), f, active)
        theta[active] = theta[active] + t[:, None] * step
    return theta, converged


def _armijo(
    objective: BatchObjective,
    theta: np.ndarray,
    step: np.ndarray,
    slope: np.ndarray,
    f: np.ndarray,
    idx: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-problem backtracking from ``t = 1``; returns (t, f at the new point, its state)."""
    t = np.ones(len(idx))
    f_new = np.empty_like(f)
    state_new: np.ndarray | None = None
    pending = np.arange(len(idx))
    while pending.size:
        tp = t[pending]
        fp, sp = objective.value(theta[pending] + tp[:, None] * step[pending], idx[pending])
        ok = (fp <= f[pending] + 1e-4 * tp * slope[pending] + 1e-14 * np.abs(f[pending])) | (
            tp < 1e-10
        )
        if state_new is None:
            state_new = np.empty((len(idx), *sp.shape[1:]), dtype=sp.dtype)
        f_new[pending[ok]] = fp[ok]
        state_new[pending[ok]] = sp[ok]
        t[pending[~ok]] *= 0.5
        pending = pending[~ok]
    assert state_new is not None
    return t, f_new, state_new
