"""The L2 logistic objective of every C of one fit, evaluated along L-BFGS search lines.

The logits of every problem are kept in float64 between iterations. A search line costs one
matrix product, ``D = Z @ (S ⊙ d)`` (in the working dtype, float32 or float64); every trial
step of the line search is then ``logits + step · D`` and the loss is evaluated in float64,
so the line search compares losses that differ by float64 rounding only, whatever the
working dtype. (Recomputing ``Z @ W`` in float32 for each trial adds a float32 rounding error
to each logit, which makes the loss noisy at about 1e-9 relative: a line search on it stops
long before the gradient test can hold.) The gradient at the accepted point costs the second
matrix product, ``Z.T @ residual``. Between the two products, each trial is one compiled pass
over the rows (:mod:`crsbench.probes._kernels`).

Variables are preconditioned, ``W = S ⊙ V`` (see :mod:`crsbench.probes._solver`); the
gradient returned is with respect to ``V``. Objectives are scikit-learn's: multi-class
``mean_i CE_i + ||W||² / (2 C n)``; multi-label, per label ``l``, ``mean over labelled rows of
BCE + ||w_l||² / (2 C n_l)``, summed over labels (the labels do not interact).
"""

from __future__ import annotations

import numpy as np

from crsbench.probes import _kernels

#: Precision of the logits kept between iterations and of every loss value.
LOSS_DTYPE = np.float64


class LogisticObjective:
    """Losses and preconditioned gradients of ``m`` L2 logistic problems sharing ``Z``.

    Parameters
    ----------
    Z : (n, r) rotated, centred features in the working dtype.
    Y : (n, K) one-hot classes (multiclass) or 0/1 targets with NaN for masked entries.
    S : (m, r + 1, K) preconditioner: ``W = S ⊙ V`` (row ``r`` is the bias).
    lam : (m, K) L2 strength per problem and output, ``1 / (C n_l)``.
    n_l : (K,) rows per output (``n`` for multiclass, labelled rows per label otherwise).
    multiclass : softmax (True) or one sigmoid per label (False).
    rot : (d, r) orthonormal axes of ``Z`` in the standardised feature space; the gradient
        test :meth:`grad_norm` is taken there, as scikit-learn takes it.
    """

    def __init__(self, Z, Y, S, lam, n_l, multiclass, rot) -> None:
        self.Z = Z
        self.n, self.r = Z.shape
        self.multiclass = multiclass
        m, _, K = S.shape
        self.K = K
        if multiclass:
            self.y = np.ascontiguousarray(np.argmax(Y, axis=1), dtype=np.int64)
        else:
            self.mask = np.ascontiguousarray(~np.isnan(Y), dtype=LOSS_DTYPE)
            self.Y = np.ascontiguousarray(np.nan_to_num(Y), dtype=LOSS_DTYPE)
        self.S = S
        self.lam = lam
        self.inv_n = 1.0 / np.asarray(n_l, dtype=LOSS_DTYPE)
        self.rot = np.asarray(rot, dtype=Z.dtype)
        self.d_sqrt = np.sqrt(max(self.rot.shape[0], 1))
        self.logits = np.zeros((self.n, m, K), dtype=LOSS_DTYPE)
        # d(data loss)/d(logits) at the last value, problem j in columns j·K ... j·K + K - 1,
        # in the working dtype (the gradient's product reads it); its column sums in float64
        self._residual = np.zeros((self.n, m * K), dtype=Z.dtype)
        self._residual_sum = np.zeros((m, K), dtype=LOSS_DTYPE)
        self._line: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._slot = np.full(m, -1, dtype=np.int64)

    # --- what the batched L-BFGS calls -------------------------------------------------
    def evaluate(self, v: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Losses and gradients of problems ``idx`` at ``v`` (logits computed afresh)."""
        idx = np.asarray(idx, dtype=np.int64)
        D, Db = self._product(v, idx)
        self.logits[:, idx] = 0.0
        slots, unit = np.arange(idx.size, dtype=np.int64), np.ones(idx.size)
        loss = self._trial(D, Db, unit, idx, slots)
        _kernels.advance(self.logits, D, Db, unit, idx, slots)
        return loss + self._penalty(v, idx), self._grad(v, idx)

    def set_line(self, v: np.ndarray, d: np.ndarray, idx: np.ndarray) -> None:
        """Prepare the search lines ``v + step · d`` of problems ``idx`` (one matrix product)."""
        self._slot[:] = -1
        self._slot[idx] = np.arange(idx.size)
        self._line = (v, d, *self._product(d, idx))

    def _current_line(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        if self._line is None:
            raise RuntimeError("LogisticObjective: set_line must come before value_at/move_to")
        return self._line

    def value_at(self, step: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Losses of problems ``idx`` (a subset of the line's) at ``v + step · d``."""
        v, d, D, Db = self._current_line()
        idx = np.asarray(idx, dtype=np.int64)
        s = self._slot[idx]
        # the residuals kept are the last trial's: the accepted step of a problem is the last
        # one tried, so move_to reuses them
        loss = self._trial(D, Db, np.asarray(step, dtype=LOSS_DTYPE), idx, s)
        return loss + self._penalty(v[s] + step[:, None] * d[s], idx)

    def move_to(self, step: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Move problems ``idx`` to ``v + step · d`` (their last value_at) and return their
        gradients there."""
        v, d, D, Db = self._current_line()
        idx = np.asarray(idx, dtype=np.int64)
        s = self._slot[idx]
        _kernels.advance(self.logits, D, Db, np.asarray(step, dtype=LOSS_DTYPE), idx, s)
        return self._grad(v[s] + step[:, None] * d[s], idx)

    def line_change(self, idx: np.ndarray) -> np.ndarray:
        """Largest change of a fitted row's probability that the unit step of the prepared
        line predicts (first order in the logits), per problem ``idx``.

        The step is the quasi-Newton step, an estimate of the way to the optimum, so this is
        the predicted distance of the fitted probabilities from the optimum's. Multi-class
        probabilities are read from the residuals, (p - y) / n, which are at the current point
        between :meth:`move_to` (or :meth:`evaluate`) and the next :meth:`value_at`, where
        :func:`~crsbench.probes._lbfgs.batched_lbfgs` asks.
        """
        _, _, D, Db = self._current_line()
        idx = np.asarray(idx, dtype=np.int64)
        s = self._slot[idx]
        if self.multiclass:
            return _kernels.softmax_change(self._residual, D, Db, idx, s, self.y, float(self.n))
        return _kernels.sigmoid_change(self.logits, D, Db, idx, s)

    def grad_norm(self, g: np.ndarray, idx: np.ndarray, tol: float | None = None) -> np.ndarray:
        """Max-norm of the gradient in the standardised features' weights and the biases.

        With ``tol``, a value is exact only where that is needed to compare it with ``tol``:
        the rotation to the standardised basis (d·r per output) is skipped for problems whose
        rotated-basis 2-norm already decides (``|g|∞ <= |g|₂ <= |g|∞ · sqrt(d)`` per output).
        """
        G = g.reshape(len(idx), self.r + 1, -1) / self.S[idx]
        bias = np.abs(G[:, self.r]).max(axis=1)
        two = np.sqrt((G[:, : self.r] ** 2).sum(axis=1)).max(axis=1, initial=0.0)
        out = np.maximum(bias, two)  # an upper bound of the max-norm
        exact = np.ones(len(idx), bool) if tol is None else (two > tol) & (two <= tol * self.d_sqrt)
        if tol is not None:
            out[~exact] = np.maximum(bias, np.where(two > tol, two / self.d_sqrt, two))[~exact]
        if exact.any():
            GW = G[exact, : self.r].transpose(1, 0, 2)
            mm, K = GW.shape[1], GW.shape[2]
            gW = self.rot @ GW.reshape(self.r, mm * K).astype(self.rot.dtype)
            gW_max = np.abs(gW).reshape(-1, mm, K).max(axis=(0, 2), initial=0.0)
            out[exact] = np.maximum(gW_max, bias[exact])
        return out

    # --- pieces --------------------------------------------------------------------------
    def _weights(self, v: np.ndarray, idx: np.ndarray) -> np.ndarray:
        return self.S[idx] * v.reshape(self.S[idx].shape)

    def _product(self, v: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``Z @ W`` in the working dtype, (n, len(idx)·K), and the biases ``b`` (len(idx), K)
        in float64: the logits (or their change along ``v``) are their sum."""
        Wfull = self._weights(v, idx)
        mm, K = Wfull.shape[0], Wfull.shape[2]
        W2 = np.ascontiguousarray(Wfull[:, : self.r].transpose(1, 0, 2).reshape(self.r, mm * K))
        return self.Z @ W2.astype(self.Z.dtype), np.ascontiguousarray(Wfull[:, self.r])

    def _penalty(self, v: np.ndarray, idx: np.ndarray) -> np.ndarray:
        W = self._weights(v, idx)[:, : self.r]
        return 0.5 * np.einsum("mrk,mrk,mk->m", W, W, self.lam[idx])

    def _trial(self, D, Db, step, idx, slots) -> np.ndarray:
        """Data losses of problems ``idx`` at ``logits + step · (D + Db)``; keeps the residuals."""
        if self.multiclass:
            return _kernels.softmax_trial(self.logits, D, Db, step, idx, slots, self.y,
                                          float(self.inv_n[0]), self._residual,
                                          self._residual_sum)  # fmt: skip
        return _kernels.sigmoid_trial(self.logits, D, Db, step, idx, slots, self.Y, self.mask,
                                      self.inv_n, self._residual, self._residual_sum)  # fmt: skip

    def _grad(self, v: np.ndarray, idx: np.ndarray) -> np.ndarray:
        mm, K = idx.size, self.K
        R = self._residual[:, (idx[:, None] * K + np.arange(K)).ravel()]
        gW = (self.Z.T @ R).reshape(self.r, mm, K).transpose(1, 0, 2).astype(LOSS_DTYPE)
        Wfull = self._weights(v, idx)
        gW += self.lam[idx][:, None, :] * Wfull[:, : self.r]
        grad = np.concatenate([gW, self._residual_sum[idx][:, None, :]], axis=1) * self.S[idx]
        return grad.reshape(mm, -1)
