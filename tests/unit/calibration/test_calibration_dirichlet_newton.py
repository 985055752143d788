"""The Dirichlet fit's Newton solver lands on the optimum BFGS (the former fit) approaches."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import approx_fprime
from scipy.special import log_softmax

from crsbench.calibration import dirichlet


def _problem(k: int, n: int, seed: int):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % k
    logits = 3.0 * (rng.normal(size=(n, k)) + 1.2 * np.eye(k)[y])
    return log_softmax(logits, axis=1), np.eye(k)[y]


def _objective(W, b, logp, Y, lam, mu):
    k = len(b)
    off = ~np.eye(k, dtype=bool)
    nll = -(log_softmax(logp @ W.T + b, axis=1) * Y).sum() / len(Y)
    return nll + lam / (k * (k - 1)) * (W[off] ** 2).sum() + mu / k * (b**2).sum()


@pytest.mark.parametrize(("k", "lam", "mu"), [(2, 1e-3, 1e-3), (5, 1.0, 0.1), (8, 1e-2, 10.0)])
def test_newton_reaches_the_bfgs_optimum(k, lam, mu):
    logp, Y = _problem(k, 30 * k, seed=k)
    Wn, bn = dirichlet._newton(logp, Y, lam, mu)
    Wb, bb = dirichlet._bfgs(logp, Y, lam, mu, max_iter=1000)
    f_newton = _objective(Wn, bn, logp, Y, lam, mu)
    assert f_newton <= _objective(Wb, bb, logp, Y, lam, mu) + 1e-12  # at least as low
    # the objective's numerical gradient vanishes at Newton's answer
    v = np.r_[Wn.ravel(), bn]
    grad = approx_fprime(v, lambda v: _objective(v[: k * k].reshape(k, k), v[k * k :], logp,
                                                 Y, lam, mu), 1e-7)  # fmt: skip
    assert np.abs(grad).max() < 1e-5
    p_newton = np.exp(log_softmax(logp @ Wn.T + bn, axis=1))
    p_bfgs = np.exp(log_softmax(logp @ Wb.T + bb, axis=1))
    assert np.abs(p_newton - p_bfgs).max() < 1e-4


def test_unregularised_fits_use_bfgs(monkeypatch):
    logp, Y = _problem(3, 60, seed=0)
    monkeypatch.setattr(dirichlet, "_newton", lambda *a: pytest.fail("Newton with mu = 0"))
    W, b = dirichlet.fit_dirichlet(logp, Y, lam=1e-2, mu=0.0)
    assert W.shape == (3, 3) and b.shape == (3,)
