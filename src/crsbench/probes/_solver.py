"""Joint L-BFGS for L2 logistic regression over a whole C grid, in a preconditioned basis.

All C values of one fit are stacked into the columns of ONE matrix product per evaluation:
logits = Z @ W with W of shape (r, m·K). The variables are rescaled per principal direction
by a curvature bound, W = S ⊙ V with S = (a·λ_j + lam_c)^(-1/2) (a = 1 for the softmax, twice
Böhning's 1/2, which took fewer iterations; 1/4 for sigmoids, Böhning's), which makes every
problem well conditioned and bounds every Hessian by the identity. The problems are
independent, so minimising their sum minimises each. The objective, and why its losses are
float64 whatever the working dtype, is in :mod:`crsbench.probes._objective`.

Stopping, per C, by the rule ``stop``: "probabilities" (the default) when the quasi-Newton
step, the solver's estimate of the way to the optimum, would move no fitted row's probability
by more than ``tol``; "gradient" when the max-norm of the gradient with respect to the
standardised features' weights and the biases is at most ``tol`` (scikit-learn's lbfgs test on
the same objective). Either way also when the loss stalls at the precision it is evaluated in
(:data:`STALL_ULPS` ulps of float64, relative; reported as not converged), or at ``max_iter``.
In float32, the products' rounding (about 1e-7 of the summed terms) can stall a problem near
its optimum before its test holds; such a problem goes on from where it stopped, with its
curvature pairs, on float64 products, within what is left of ``max_iter``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crsbench.probes._lbfgs import LBFGSResult, batched_lbfgs, stall_ftol
from crsbench.probes._objective import LOSS_DTYPE, LogisticObjective
from crsbench.protocol import LOGISTIC_STOP

#: A relative loss decrease below this many float64 ulps, three iterations in a row, is
#: rounding, not progress: the data loss is a compensated sum of per-row terms, within half an
#: ulp of its exact value (tested against extended precision; 0.1 ulp measured), where
#: scikit-learn's, with its factor 64, is within a few ulps. (The penalty is a plain sum,
#: within a few ulps of itself; it is a fraction of the loss.)
STALL_ULPS = 4.0

#: The batched L-BFGS test behind each stopping rule of the probe.
_LBFGS_TEST = {"probabilities": "change", "gradient": "gradient"}


@dataclass(frozen=True)
class SolveResult:
    """Weights in the rotated basis for every C: ``W`` (m, r, K) and ``b`` (m, K)."""

    W: np.ndarray
    b: np.ndarray
    n_iter: int
    converged: np.ndarray  # (m,) bool: the stopping rule's test held for that C
    grad_norm: np.ndarray  # (m,) max-norm of the gradient (standardised features) at the end
    message: str


def solve_logistic_path(
    Z: np.ndarray,
    eig: np.ndarray,
    rot: np.ndarray,
    Y: np.ndarray,
    Cs: np.ndarray,
    task: str,
    max_iter: int,
    tol: float,
    stop: str = LOGISTIC_STOP,
) -> SolveResult:
    """Minimise the L2 logistic objective for every C in ``Cs`` jointly.

    Parameters
    ----------
    Z : (n, r) rotated, centred features (float32 or float64).
    eig : (r,) eigenvalues of ``Z.T @ Z / n``.
    rot : (d, r) principal axes: ``Z = X_standardised @ rot``.
    Y : multiclass (n, K) one-hot; multilabel (n, L) 0/1 with NaN for masked entries.
    Cs : (m,) inverse regularisation strengths.
    task : "multiclass" or "multilabel".
    max_iter, tol : iteration cap and the stopping rule's tolerance.
    stop : "probabilities" (the predicted change of the fitted rows' probabilities, see
        :meth:`~crsbench.probes._objective.LogisticObjective.line_change`) or "gradient"
        (the gradient max-norm in the standardised features' weights and the biases, as
        scikit-learn).
    """
    n, r = Z.shape
    K = Y.shape[1]
    m = len(Cs)
    multiclass = task == "multiclass"
    n_l = np.full(K, float(n)) if multiclass else (~np.isnan(Y)).sum(axis=0).astype(np.float64)
    a = 1.0 if multiclass else 0.25
    lam = 1.0 / (np.asarray(Cs, dtype=np.float64)[:, None] * n_l[None, :])  # (m, K)
    S = np.empty((m, r + 1, K))
    S[:, :r, :] = 1.0 / np.sqrt(a * eig[None, :, None] + lam[:, None, :])
    S[:, r, :] = 1.0 / np.sqrt(a)
    v0 = np.zeros((m, r + 1, K))
    v0[:, r, :] = _prior_logits(Y, n_l, multiclass) / S[:, r, :]
    res = _minimise(LogisticObjective(Z, Y, S, lam, n_l, multiclass, rot), v0.reshape(m, -1),
                    max_iter, tol, stop)  # fmt: skip
    if Z.dtype != np.float64 and not res.converged.all() and res.n_iter < max_iter:
        redo = np.flatnonzero(~res.converged)
        objective64 = LogisticObjective(Z.astype(np.float64), Y, S[redo], lam[redo], n_l,
                                        multiclass, rot)  # fmt: skip
        res = _go_on(res, redo, objective64, max_iter, tol, stop)
    Wfull = S * res.x.reshape(S.shape)
    return SolveResult(
        Wfull[:, :r, :].copy(),
        Wfull[:, r, :].copy(),
        int(res.n_iter),
        res.converged,
        res.grad_norm,
        res.message,
    )


def _minimise(objective, v0, max_iter, tol, stop, memory=None) -> LBFGSResult:
    return batched_lbfgs(objective, v0, max_iter=max_iter, tol=tol,
                         ftol=stall_ftol(LOSS_DTYPE, STALL_ULPS), test=_LBFGS_TEST[stop],
                         memory=memory)  # fmt: skip


def _go_on(res, redo, objective, max_iter, tol, stop) -> LBFGSResult:
    """``res`` with its problems ``redo`` taken on from where they stopped by ``objective``
    (theirs alone, with other products) and their curvature pairs, within what is left of
    ``max_iter``."""
    assert res.memory is not None
    more = _minimise(objective, res.x[redo], max_iter - res.n_iter, tol, stop,
                     res.memory.take(redo))  # fmt: skip
    x, f, grad = res.x.copy(), res.f.copy(), res.grad.copy()
    grad_norm, converged = res.grad_norm.copy(), res.converged.copy()
    x[redo], f[redo], grad[redo] = more.x, more.f, more.grad
    grad_norm[redo], converged[redo] = more.grad_norm, more.converged
    message = "converged" if converged.all() else more.message
    return LBFGSResult(x, f, grad, grad_norm, res.n_iter + more.n_iter, converged, message)


def _prior_logits(Y: np.ndarray, n_l: np.ndarray, multiclass: bool) -> np.ndarray:
    """Starting biases: centred log class priors (multiclass) or log prevalence odds."""
    if multiclass:
        logp = np.log(np.clip(Y.mean(axis=0), 1e-12, None))
        return logp - logp.mean()
    rate = np.clip(np.nansum(Y, axis=0) / np.maximum(n_l, 1), 1e-6, 1 - 1e-6)
    return np.log(rate / (1 - rate))
