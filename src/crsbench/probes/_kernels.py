"""Compiled row loops of the logistic objective: one pass over the rows per line-search trial.

The objective (:mod:`crsbench.probes._objective`) keeps every problem's logits in float64,
``L`` of shape (n, m, K). A search line of the problems ``idx`` is the matrix product
``D = Z @ (S ⊙ d)`` in the working dtype, shape (n, slots·K) with problem ``idx[jj]`` in the
columns of slot ``slots[jj]``, plus its bias part ``Db`` (slots, K), float64. A trial step is
``L + step · (D + Db)``; each kernel below reads every row once, where numpy would make a
dozen passes with temporaries:

* ``*_trial``: the data loss of each problem at its trial step (float64, compensated sum over
  the rows), and the residual, the derivative of the data loss in the logits, written in the
  working dtype into the problem's own columns of ``R`` (n, m·K), ready for the gradient's
  matrix product, with its column sums (the biases' gradient) in float64 in ``rsum`` (m, K);
* :func:`advance`: commit the accepted steps to ``L``;
* ``*_change``: the largest change of a fitted row's probability that the unit step predicts
  (first order in the logits).

The kernels are compiled by numba on their first call in a process
(:class:`~crsbench.core.jit.LazyKernel`).
"""

from __future__ import annotations

import math

import numpy as np

from crsbench.core.jit import LazyKernel


def _add_compensated(total: float, carry: float, term: float) -> tuple[float, float]:
    """Neumaier's compensated sum: ``total + term`` and the rounding error carried so far."""
    new = total + term
    if abs(total) >= abs(term):
        carry += (total - new) + term
    else:
        carry += (term - new) + total
    return new, carry


def _cleared_sums(rsum, idx):
    """Zero the residual sums of problems ``idx``; a loss total and its carry per problem."""
    for j in idx:
        rsum[j, :] = 0.0
    return np.zeros(idx.size), np.zeros(idx.size)


def _log_sigmoid(z: float) -> float:
    """``log σ(z)``, stable for both signs."""
    if z >= 0.0:
        return -math.log1p(math.exp(-z))
    return z - math.log1p(math.exp(z))


def _softmax_trial(L, D, Db, step, idx, slots, y, inv_n, R, rsum):  # pragma: no cover - compiled
    """Mean cross-entropy of problems ``idx`` at their trial steps; residuals into R, rsum."""
    n, _, K = L.shape
    m = idx.size
    total, carry = _cleared_sums(rsum, idx)
    t = np.empty(K)
    for i in range(n):
        yi = y[i]
        for jj in range(m):
            j, s, st = idx[jj], slots[jj], step[jj]
            top = -np.inf
            for k in range(K):
                v = L[i, j, k] + st * (D[i, s * K + k] + Db[s, k])
                t[k] = v
                top = max(top, v)
            t_y = t[yi]
            norm = 0.0
            for k in range(K):
                t[k] = math.exp(t[k] - top)
                norm += t[k]
            total[jj], carry[jj] = _add_compensated(total[jj], carry[jj],
                                                    math.log(norm) + top - t_y)  # fmt: skip
            inv = 1.0 / norm
            for k in range(K):
                r = (t[k] * inv - (1.0 if k == yi else 0.0)) * inv_n
                R[i, j * K + k] = r
                rsum[j, k] += r
    return (total + carry) * inv_n


def _sigmoid_trial(L, D, Db, step, idx, slots, Y, mask, inv_n, R, rsum):  # pragma: no cover
    """Sum over labels of the mean binary cross-entropy over each label's labelled rows."""
    n, _, K = L.shape
    m = idx.size
    total, carry = _cleared_sums(rsum, idx)
    for i in range(n):
        for jj in range(m):
            j, s, st = idx[jj], slots[jj], step[jj]
            for k in range(K):
                if mask[i, k] == 0.0:
                    R[i, j * K + k] = 0.0
                    continue
                z = L[i, j, k] + st * (D[i, s * K + k] + Db[s, k])
                log_p = _log_sigmoid(z)
                total[jj], carry[jj] = _add_compensated(
                    total[jj], carry[jj], ((1.0 - Y[i, k]) * z - log_p) * inv_n[k]
                )
                r = (math.exp(log_p) - Y[i, k]) * inv_n[k]
                R[i, j * K + k] = r
                rsum[j, k] += r
    return total + carry


def _advance(L, D, Db, step, idx, slots):  # pragma: no cover - compiled
    """``L[:, idx] += step · (D + Db)`` for every problem of the line."""
    n, _, K = L.shape
    for i in range(n):
        for jj in range(idx.size):
            j, s, st = idx[jj], slots[jj], step[jj]
            for k in range(K):
                L[i, j, k] += st * (D[i, s * K + k] + Db[s, k])


def _softmax_change(R, D, Db, idx, slots, y, n_rows):  # pragma: no cover - compiled
    """Largest |Δp| of a row the unit step predicts: p ⊙ (dz − p·dz), p from the residuals."""
    n = R.shape[0]
    K = Db.shape[1]
    out = np.zeros(idx.size)
    p = np.empty(K)
    for i in range(n):
        yi = y[i]
        for jj in range(idx.size):
            j, s = idx[jj], slots[jj]
            mean = 0.0
            for k in range(K):
                p[k] = R[i, j * K + k] * n_rows + (1.0 if k == yi else 0.0)
                mean += p[k] * (D[i, s * K + k] + Db[s, k])
            for k in range(K):
                out[jj] = max(out[jj], abs(p[k] * (D[i, s * K + k] + Db[s, k] - mean)))
    return out


def _sigmoid_change(L, D, Db, idx, slots):  # pragma: no cover - compiled
    """Largest |Δp| of a row (labelled or not) the unit step predicts: p (1 − p) dz."""
    n, _, K = L.shape
    out = np.zeros(idx.size)
    for i in range(n):
        for jj in range(idx.size):
            j, s = idx[jj], slots[jj]
            for k in range(K):
                p = 1.0 / (1.0 + math.exp(-L[i, j, k]))
                out[jj] = max(out[jj], abs(p * (1.0 - p) * (D[i, s * K + k] + Db[s, k])))
    return out


_HELPERS = ("_add_compensated", "_cleared_sums", "_log_sigmoid")
softmax_trial = LazyKernel(_softmax_trial, _HELPERS)
sigmoid_trial = LazyKernel(_sigmoid_trial, _HELPERS)
advance = LazyKernel(_advance)
softmax_change = LazyKernel(_softmax_change)
sigmoid_change = LazyKernel(_sigmoid_change)
