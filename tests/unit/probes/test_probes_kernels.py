"""The compiled row loops of the logistic objective against independent computations.

The losses are compared with extended precision (numpy longdouble): the stall test of the
solver (``STALL_ULPS`` = 4 ulps of float64) relies on them being within a fraction of an ulp.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit, softmax
from sklearn.metrics import log_loss

from crsbench.core.jit import LazyKernel, float_from_bits
from crsbench.core.workers import one_blas_thread
from crsbench.probes import _kernels, fit_probe_grid
from crsbench.probes._kernels import _exp_nonpositive

EPS = np.finfo(np.float64).eps


def _line(n, m, K, scale, seed=0):
    """Logits (n, m, K) and a line: D (n, 2·K float32, problem j in slot 1 - j) and Db."""
    rng = np.random.default_rng(seed)
    L = rng.normal(size=(n, m, K)) * scale
    D = (rng.normal(size=(n, 2 * K)) * 0.3).astype(np.float32)
    Db = rng.normal(size=(2, K)) * 0.1
    return L, D, Db


def _trial_logits(L, D, Db, step, idx, slots):
    K = L.shape[2]
    out = []
    for jj, (j, s) in enumerate(zip(idx, slots, strict=True)):
        out.append(L[:, j] + step[jj] * (D[:, s * K : (s + 1) * K].astype(np.float64) + Db[s]))
    return out


@pytest.mark.parametrize(("scale", "n"), [(1.0, 3000), (30.0, 3000), (300.0, 3001)])
def test_softmax_trial_is_the_mean_cross_entropy_to_a_fraction_of_an_ulp(scale, n):
    """Rows are taken in blocks of 8 (3001: a partial last block); at scale 300 logits lie
    more than 708 below their row's largest, where the exponential is clamped."""
    m, K = 3, 6
    L, D, Db = _line(n, m, K, scale)
    y = np.random.default_rng(1).integers(0, K, n).astype(np.int64)
    idx, slots, step = np.array([2, 0]), np.array([0, 1]), np.array([0.7, 1.0])
    R = np.zeros((n, m * K), np.float32)
    rsum = np.zeros((m, K))
    loss = _kernels.softmax_trial(L, D, Db, step, idx, slots, y, 1.0 / n, R, rsum)
    for jj, z in enumerate(_trial_logits(L, D, Db, step, idx, slots)):
        zq = z.astype(np.longdouble)
        top = zq.max(axis=1, keepdims=True)
        exact = (np.log(np.exp(zq - top).sum(axis=1)) + top[:, 0] - zq[np.arange(n), y]).mean()
        assert abs(float(loss[jj] - exact)) <= 0.5 * EPS * max(float(exact), 1.0)
        if scale == 1.0:  # log_loss clips probabilities at 1e-15: not at large logits
            assert loss[jj] == pytest.approx(
                log_loss(y, softmax(z, axis=1), labels=range(K)), rel=1e-9
            )
        want = (softmax(z, axis=1) - np.eye(K)[y]) / n
        j = idx[jj]
        np.testing.assert_allclose(R[:, j * K : (j + 1) * K], want, rtol=1e-6, atol=1e-12)
        np.testing.assert_allclose(rsum[j], want.sum(axis=0), rtol=1e-12, atol=1e-17)
    assert not R[:, K : 2 * K].any()  # problem 1 was not asked for


def _exp_each(x, out):  # pragma: no cover - compiled
    for q in range(x.size):
        out[q] = _exp_nonpositive(x[q])


_compiled_exp = LazyKernel(_exp_each, helpers=("_exp_nonpositive",))


def test_the_kernels_exponential_is_within_about_one_ulp_of_the_exact_value():
    """The softmax trial's vectorisable exp (a bit cast for 2^k) against extended precision,
    and against libm; below -708 it returns exp(-708)."""
    rng = np.random.default_rng(4)
    x = np.concatenate([-rng.uniform(0, 708, 20_000), -rng.exponential(1.0, 20_000), [0.0, -708.0]])
    out = np.empty_like(x)
    _compiled_exp(x, out)
    ulps = np.abs((out - np.exp(x.astype(np.longdouble))) / np.spacing(np.exp(x)))
    assert float(ulps.max()) <= 1.5
    assert np.mean(out == np.exp(x)) > 0.8  # mostly libm's own rounding
    assert out[-2] == 1.0
    at_limit = out[-1]
    for below in (-709.0, -1e4, -np.inf):
        _compiled_exp(np.array([below]), out[:1])
        assert out[0] == at_limit


def test_float_from_bits_reads_ieee_754_bit_patterns():
    assert float_from_bits(0x3FF0000000000000) == 1.0
    assert float_from_bits((-3 + 1023) << 52) == 0.125
    assert float_from_bits(np.float64(-2.5).view(np.int64).item()) == -2.5


def test_sigmoid_trial_is_the_masked_mean_binary_cross_entropy():
    n, m, K = 2000, 2, 4
    L, D, Db = _line(n, m, K, 4.0, seed=2)
    rng = np.random.default_rng(3)
    Y = (rng.random((n, K)) < 0.3).astype(np.float64)
    mask = (rng.random((n, K)) > 0.2).astype(np.float64)
    inv_n = 1.0 / mask.sum(axis=0)
    idx, slots, step = np.array([1]), np.array([0]), np.array([0.5])
    R = np.full((n, m * K), np.nan, np.float32)
    rsum = np.zeros((m, K))
    loss = _kernels.sigmoid_trial(L, D, Db, step, idx, slots, Y, mask, inv_n, R, rsum)
    (z,) = _trial_logits(L, D, Db, step, idx, slots)
    zq = z.astype(np.longdouble)
    bce = (1 - Y) * zq + np.log1p(np.exp(-zq))
    exact = ((bce * mask).sum(axis=0) * inv_n).sum()
    assert abs(float(loss[0] - exact)) <= 0.5 * EPS * max(float(exact), 1.0)
    want = (expit(z) - Y) * mask * inv_n
    np.testing.assert_allclose(R[:, K:], want, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(rsum[1], want.sum(axis=0), rtol=1e-12)


def test_advance_commits_the_trial_logits():
    L, D, Db = _line(50, 3, 5, 1.0)
    idx, slots, step = np.array([0, 2]), np.array([1, 0]), np.array([0.25, 2.0])
    want = _trial_logits(L, D, Db, step, idx, slots)
    before = L[:, 1].copy()
    _kernels.advance(L, D, Db, step, idx, slots)
    for jj, j in enumerate(idx):
        np.testing.assert_array_equal(L[:, j], want[jj])
    np.testing.assert_array_equal(L[:, 1], before)


def test_the_fits_do_not_depend_on_the_number_of_threads():
    """On one BLAS thread (a run's workers), fitting the subsets two at a time changes no bit."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 20)).astype(np.float32)
    y = (X[:, :3] @ rng.normal(size=(3, 4))).argmax(axis=1)
    subsets = {
        (f, s): np.sort(rng.permutation(600)[: int(f * 600)]) for f in (0.2, 0.5) for s in (0, 1)
    }
    with one_blas_thread():
        one, two = (_grid(X, y, subsets, threads) for threads in (1, 2))
    assert list(one) == list(two) == list(subsets)
    for key in subsets:
        np.testing.assert_array_equal(one[key].coef_path, two[key].coef_path)
        assert one[key].n_iter == two[key].n_iter


def _grid(X, y, subsets, threads):
    return fit_probe_grid(X, y, X[:100], y[:100], "multiclass", [0.01, 1.0, 100.0], subsets,
                          tol=1e-6, threads=threads)  # fmt: skip


def test_threads_must_be_a_positive_integer():
    X = np.zeros((10, 2))
    with pytest.raises(ValueError, match="threads"):
        fit_probe_grid(X, np.arange(10) % 2, None, None, "multiclass", threads=0)
