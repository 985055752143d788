"""The solver's stopping rules: the stall threshold follows the dtype; losses along a search
line are exact enough in float32 for the line search to go on to the gradient test; the
probability test measures what it says and is never skipped into an early stop."""

from __future__ import annotations

import numpy as np
import pytest

from crsbench.probes._basis import build_basis
from crsbench.probes._lbfgs import _change_test, stall_ftol
from crsbench.probes._objective import LOSS_DTYPE, LogisticObjective
from crsbench.probes._solver import solve_logistic_path


def test_stall_threshold_is_64_eps_of_the_dtype():
    assert stall_ftol(np.float64) == 64 * np.finfo(np.float64).eps  # 1.4e-14, scikit-learn's
    assert stall_ftol(np.float32) == 64 * np.finfo(np.float32).eps  # 7.6e-6
    assert stall_ftol(np.float32) > 1e8 * stall_ftol(np.float64)


def test_losses_are_evaluated_in_float64():
    assert LOSS_DTYPE == np.float64


def _objective(dtype, task="multiclass", n=3000, d=30, K=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) @ rng.normal(size=(d, d))
    if task == "multiclass":
        Y = np.eye(K)[(X @ rng.normal(size=(d, K)) * 0.2 + rng.gumbel(size=(n, K))).argmax(1)]
        a = 0.5
    else:
        Y = (X @ rng.normal(size=(d, K)) * 0.1 + rng.normal(size=(n, K)) > 0).astype(float)
        a = 0.25
    basis, Z = build_basis(X, dtype)
    r = Z.shape[1]
    lam = np.full((1, K), 1.0 / n)
    S = np.empty((1, r + 1, K))
    S[:, :r] = 1.0 / np.sqrt(a * basis.eig[None, :, None] + lam[:, None])
    S[:, r] = 1.0 / np.sqrt(a)
    n_l = np.full(K, float(n))
    obj = LogisticObjective(Z, Y, S, lam, n_l, task == "multiclass", basis.rot)
    return obj, (r + 1) * K


@pytest.mark.parametrize("task", ["multiclass", "multilabel"])
def test_float32_line_search_sees_decreases_far_below_float32_resolution(task):
    """Along a line, f(step) - f(0) matches the slope to 1e-3 even where the decrease is
    ~1e-12 of the loss: the line search never mistakes float32 rounding for a failed step."""
    obj, p = _objective(np.float32, task)
    idx = np.array([0])
    v = np.random.default_rng(3).normal(size=(1, p)) * 0.1
    f0, g = obj.evaluate(v, idx)
    d = -g
    obj.set_line(v, d, idx)
    slope = float(g[0] @ d[0])
    for relative_decrease in (1e-6, 1e-11):  # float32 resolves ~1e-7 of a value
        step = relative_decrease * abs(f0[0]) / abs(slope)
        change = obj.value_at(np.array([step]), idx)[0] - f0[0]
        assert change < 0
        assert abs(change / (step * slope) - 1.0) < 1e-3


@pytest.mark.parametrize("task", ["multiclass", "multilabel"])
def test_float32_and_float64_objectives_agree(task):
    o32, p = _objective(np.float32, task)
    o64, _ = _objective(np.float64, task)
    idx = np.array([0])
    v = np.random.default_rng(4).normal(size=(1, p)) * 0.1
    f32, g32 = o32.evaluate(v, idx)
    f64, g64 = o64.evaluate(v, idx)
    np.testing.assert_allclose(f32, f64, rtol=1e-6)
    # the rotated bases differ at float32 precision: compare the basis-free gradient test
    np.testing.assert_allclose(o32.grad_norm(g32, idx), o64.grad_norm(g64, idx), rtol=1e-4)


def test_grad_norm_is_the_max_norm_in_the_standardised_basis():
    """The test scikit-learn applies: max |∂f/∂w_j| over standardised features and biases."""
    obj, p = _objective(np.float64)
    idx = np.array([0])
    v = np.random.default_rng(5).normal(size=(1, p)) * 0.1
    _, g = obj.evaluate(v, idx)
    G = g.reshape(obj.r + 1, -1) / obj.S[0]
    expected = max(np.abs(obj.rot @ G[: obj.r]).max(), np.abs(G[obj.r]).max())
    np.testing.assert_allclose(obj.grad_norm(g, idx), [expected], rtol=1e-12)
    for tol in (expected / 2, expected * 2):  # the screened value lies on the same side of tol
        assert (obj.grad_norm(g, idx, tol)[0] <= tol) == (expected <= tol)


def _path(dtype, stop, tol):
    rng = np.random.default_rng(6)
    X = rng.normal(size=(1500, 25)) @ rng.normal(size=(25, 25))
    y = (X @ rng.normal(size=(25, 3)) * 0.3 + rng.gumbel(size=(1500, 3))).argmax(1)
    basis, Z = build_basis(X, dtype)
    Cs = np.logspace(-3, 2, 6)
    return solve_logistic_path(Z, basis.eig, basis.rot, np.eye(3)[y], Cs, "multiclass", 1000,
                               tol, stop)  # fmt: skip


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_every_C_of_a_path_ends_by_the_gradient_test(dtype):
    res = _path(dtype, "gradient", 1e-7)
    assert res.converged.all(), res.message
    assert (res.grad_norm <= 1e-7).all()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_every_C_of_a_path_ends_by_the_probability_test(dtype):
    res = _path(dtype, "probabilities", 1e-6)
    assert res.converged.all(), res.message


@pytest.mark.parametrize("task", ["multiclass", "multilabel"])
def test_line_change_is_the_first_order_change_of_every_probability(task):
    """line_change = max over rows and outputs of |dp/dstep| at step 0 (finite difference,
    float64), i.e. the change the unit step predicts to first order."""
    from scipy.special import expit, softmax

    obj, p = _objective(np.float64, task)
    idx = np.array([0])
    rng = np.random.default_rng(7)
    v = rng.normal(size=(1, p)) * 0.1
    obj.evaluate(v, idx)
    d = rng.normal(size=(1, p)) * 1e-3
    obj.set_line(v, d, idx)
    link = (lambda z: softmax(z, axis=-1)) if task == "multiclass" else expit
    z0 = obj.logits[:, 0].copy()
    product, bias = obj._product(d, idx)  # the logits' change along d: Z @ W + b
    D = product.astype(np.float64) + bias[0]
    eps = 1e-6
    fd = (link(z0 + eps * D) - link(z0 - eps * D)) / (2 * eps)
    np.testing.assert_allclose(obj.line_change(idx), [np.abs(fd).max()], rtol=1e-4)


class _CountingChanges:
    """An objective whose predicted changes are fixed; records which problems were asked."""

    def __init__(self, changes):
        self.changes = np.asarray(changes, dtype=float)
        self.asked: list[list[int]] = []

    def line_change(self, idx):
        self.asked.append(idx.tolist())
        return self.changes[idx]


def test_change_test_skips_far_problems_between_checks_but_never_passes_them():
    """A problem far from tol (> 30 tol at its last check) is re-checked every fourth
    iteration only; a skipped check never counts as a pass, and a near one is checked each
    iteration."""
    tol = 1e-6
    obj = _CountingChanges([1.0, 1e-5, 5e-7])
    change = np.full(3, np.inf)
    ids = np.arange(3)
    assert _change_test(obj, ids, change, 1, tol).tolist() == [False, False, True]
    obj.changes[:] = 1e-7  # every problem would pass now
    assert _change_test(obj, ids, change, 2, tol).tolist() == [False, True, True]
    assert obj.asked[-1] == [1, 2]  # problem 0 (last seen at 1.0) not asked on iteration 2
    assert _change_test(obj, ids, change, 5, tol).tolist() == [True, True, True]
    assert obj.asked[-1] == [0, 1, 2]
