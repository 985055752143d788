"""The batched L-BFGS solves independent problems exactly as separate solves would."""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from crsbench.probes._lbfgs import FunctionObjective, batched_lbfgs


def _quadratics(m: int, p: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    A = []
    for i in range(m):
        Q = np.linalg.qr(rng.normal(size=(p, p)))[0]
        eig = np.linspace(0.05, 1.0, p) * (1.0 - 0.5 * i / m)  # Hessian <= I, different per problem
        A.append(Q @ np.diag(eig) @ Q.T)
    A = np.stack(A)
    b = rng.normal(size=(m, p))

    def fun(X, idx):
        AX = np.einsum("mpq,mq->mp", A[idx], X)
        return 0.5 * np.einsum("mp,mp->m", X, AX) - np.einsum("mp,mp->m", b[idx], X), AX - b[idx]

    return A, b, fun


def test_quadratics_reach_the_exact_minimisers():
    A, b, fun = _quadratics(m=5, p=20)
    res = batched_lbfgs(FunctionObjective(fun), np.zeros((5, 20)), max_iter=500, tol=1e-7, ftol=0.0)
    exact = np.stack([np.linalg.solve(A[i], b[i]) for i in range(5)])
    assert res.converged.all()
    np.testing.assert_allclose(res.x, exact, atol=1e-5)


def test_logistic_problems_match_scipy_one_by_one():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 6))
    y = (X @ rng.normal(size=6) + rng.normal(size=200) > 0).astype(float)
    lams = np.array([1e-3, 1e-1, 1.0])

    def one(w, lam):
        z = X @ w
        f = np.mean(np.logaddexp(0, z) - y * z) + 0.5 * lam * w @ w
        g = X.T @ (1 / (1 + np.exp(-z)) - y) / len(y) + lam * w
        return f, g

    def fun(W, idx):
        out = [one(w, lams[i]) for w, i in zip(W, idx, strict=True)]
        return np.array([o[0] for o in out]), np.stack([o[1] for o in out])

    res = batched_lbfgs(FunctionObjective(fun), np.zeros((3, 6)), max_iter=1000, tol=1e-7, ftol=0.0)
    for i, lam in enumerate(lams):
        ref = minimize(
            lambda w, lam=lam: one(w, lam),
            np.zeros(6),
            jac=True,
            method="L-BFGS-B",
            options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 1000},
        )
        np.testing.assert_allclose(res.x[i], ref.x, atol=1e-5)
    assert res.converged.all()


def test_iteration_cap_reports_not_converged():
    _, _, fun = _quadratics(m=2, p=30, seed=3)
    res = batched_lbfgs(FunctionObjective(fun), np.zeros((2, 30)), max_iter=2, tol=1e-12)
    assert res.n_iter == 2 and not res.converged.any()
    assert res.message == "iteration cap reached"


def test_a_run_taken_on_with_its_memory_continues_exactly_where_it_stopped():
    """Stopping after 7 iterations and going on with the result's curvature pairs gives the
    iterates of one uninterrupted run (a float32 fit goes on so in float64)."""
    _, _, fun = _quadratics(m=4, p=30, seed=3)
    straight = batched_lbfgs(FunctionObjective(fun), np.zeros((4, 30)), max_iter=19, tol=1e-12,
                             ftol=0.0)  # fmt: skip
    first = batched_lbfgs(
        FunctionObjective(fun), np.zeros((4, 30)), max_iter=7, tol=1e-12, ftol=0.0
    )
    assert first.memory is not None and (first.memory.rho != 0).any()
    rest = batched_lbfgs(FunctionObjective(fun), first.x, max_iter=12, tol=1e-12, ftol=0.0,
                         memory=first.memory)  # fmt: skip
    np.testing.assert_array_equal(rest.x, straight.x)
    fresh = batched_lbfgs(FunctionObjective(fun), first.x, max_iter=12, tol=1e-12, ftol=0.0)
    assert np.abs(fresh.x - straight.x).max() > 1e-9  # the memory is what makes it exact


def test_a_problem_stalls_only_after_three_flat_iterations_in_a_row():
    """A decrease below ftol once (an overshooting step) does not end a problem; three in a
    row do (each step here is accepted and lowers the loss by ~1e-30)."""

    def tilted(X, idx):  # a linear loss with a tiny slope: every step is nearly flat
        return -1e-15 * X.sum(axis=1), np.full_like(X, -1e-15)

    res = batched_lbfgs(FunctionObjective(tilted), np.zeros((1, 3)), max_iter=50, tol=1e-40)
    assert res.n_iter == 3 and not res.converged.any()
    assert (res.x > 0).all()  # every one of the three steps was taken


def test_a_real_decrease_resets_the_stall_count():
    """Flat, flat, a real decrease, flat, flat: no three flat iterations in a row, so the
    problem runs on (a count that never reset would stop it at the fourth flat step)."""
    losses = iter([0.0, -1e-30, -2e-30, -1.0, -1.0 - 1e-30, -1.0 - 2e-30, -1.0 - 3e-30] * 3)

    def scripted(X, idx):
        return np.array([next(losses)]), np.full_like(X, -1e-15)

    res = batched_lbfgs(FunctionObjective(scripted), np.zeros((1, 3)), max_iter=50, tol=1e-40)
    assert res.n_iter == 6  # flat at 1, 2; real at 3; flat at 4, 5, 6: the third in a row stops


def test_problems_taken_on_by_another_objective_keep_their_place_and_budget():
    """_go_on (a stalled float32 fit going on in float64): the problems taken on continue
    exactly as one run would, the others are untouched, and the iterations add up."""
    from crsbench.probes._solver import _go_on

    _, _, fun = _quadratics(m=4, p=30, seed=5)
    redo = np.array([1, 3])
    first = batched_lbfgs(FunctionObjective(fun), np.zeros((4, 30)), max_iter=6, tol=1e-12,
                          ftol=0.0, test="change")  # fmt: skip
    sub = FunctionObjective(lambda X, idx: fun(X, redo[idx]))
    res = _go_on(first, redo, sub, max_iter=15, tol=1e-12, stop="probabilities")
    straight = batched_lbfgs(FunctionObjective(fun), np.zeros((4, 30)), max_iter=15, tol=1e-12,
                             ftol=0.0, test="change")  # fmt: skip
    assert res.n_iter == 15
    np.testing.assert_array_equal(res.x[[0, 2]], first.x[[0, 2]])
    np.testing.assert_allclose(res.x[redo], straight.x[redo], rtol=0, atol=1e-12)
    assert res.message == "iteration cap reached" and not res.converged.any()
