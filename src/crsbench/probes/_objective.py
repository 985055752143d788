"""The L2 logistic objective of every C of one fit, evaluated along L-BFGS search lines.

The logits of every problem are kept in float64 between iterations. A search line costs one
matrix product, ``D = Z @ (S ⊙ d)`` (in the working dtype, float32 or float64); every trial
step of the line search is then ``logits + step · D`` and the loss is evaluated in float64,
so the line search compares losses that differ by float64 rounding only, whatever the
working dtype. (Recomputing ``Z @ W`` in float32 for each trial adds a float32 rounding error
to each logit, which makes the loss noisy at about 1e-9 relative: a line search on it stops
long before the gradient test can hold.) The gradient at the accepted point costs the second
matrix product, ``Z.T @ residual``.

Variables are preconditioned, ``W = S ⊙ V`` (see :mod:`crsbench.probes._solver`); the
gradient returned is with respect to ``V``. Objectives are scikit-learn's: multi-class
``mean_i CE_i + ||W||² / (2 C n)``; multi-label, per label ``l``, ``mean over labelled rows of
BCE + ||w_l||² / (2 C n_l)``, summed over labels (the labels do not interact).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, log_expit

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
        self.mask = None if multiclass else (~np.isnan(Y)).astype(LOSS_DTYPE)
        self.Y = np.nan_to_num(Y).astype(LOSS_DTYPE)
        self.S = S
        self.lam = lam
        self.inv_n = 1.0 / np.asarray(n_l, dtype=LOSS_DTYPE)
        self.rot = np.asarray(rot, dtype=Z.dtype)
        self.d_sqrt = np.sqrt(max(self.rot.shape[0], 1))
        m, _, K = S.shape
        self.logits = np.zeros((self.n, m, K), dtype=LOSS_DTYPE)
        self._residual = np.zeros_like(self.logits)  # d(data loss)/d(logits) at the last value
        self._line: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._slot = np.full(m, -1)

    # --- what the batched L-BFGS calls -------------------------------------------------
    def evaluate(self, v: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Losses and gradients of problems ``idx`` at ``v`` (logits computed afresh)."""
        self.logits[:, idx] = self._product(v, idx)
        loss, self._residual[:, idx] = self._loss_and_residual(self.logits[:, idx])
        return loss + self._penalty(v, idx), self._grad(v, idx)

    def set_line(self, v: np.ndarray, d: np.ndarray, idx: np.ndarray) -> None:
        """Prepare the search lines ``v + step · d`` of problems ``idx`` (one matrix product)."""
        self._slot[:] = -1
        self._slot[idx] = np.arange(idx.size)
        self._line = (v, d, self._product(d, idx))

    def _current_line(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._line is None:
            raise RuntimeError("LogisticObjective: set_line must come before value_at/move_to")
        return self._line

    def value_at(self, step: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Losses of problems ``idx`` (a subset of the line's) at ``v + step · d``."""
        v, d, D = self._current_line()
        s = self._slot[idx]
        logits = self.logits[:, idx] + step[None, :, None] * D[:, s]
        # kept: the accepted step of a problem is the last one tried, so move_to reuses it
        loss, self._residual[:, idx] = self._loss_and_residual(logits)
        return loss + self._penalty(v[s] + step[:, None] * d[s], idx)

    def move_to(self, step: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Move problems ``idx`` to ``v + step · d`` (their last value_at) and return their
        gradients there."""
        v, d, D = self._current_line()
        s = self._slot[idx]
        self.logits[:, idx] += step[None, :, None] * D[:, s]
        return self._grad(v[s] + step[:, None] * d[s], idx)

    def line_change(self, idx: np.ndarray) -> np.ndarray:
        """Largest change of a fitted row's probability that the unit step of the prepared
        line predicts (first order in the logits), per problem ``idx``.

        The step is the quasi-Newton step, an estimate of the way to the optimum, so this is
        the predicted distance of the fitted probabilities from the optimum's. Evaluated in
        float32: it is compared with a tolerance, not accumulated.
        """
        _, _, D = self._current_line()
        dz = D[:, self._slot[idx]].astype(np.float32)
        if self.multiclass:  # the residual (p - y) / n is at the current point
            p = (self._residual[:, idx] * self.n).astype(np.float32)
            p += self.Y[:, None, :]
            dz -= np.einsum("nmk,nmk->nm", p, dz)[..., None]
            dz *= p
        else:
            p = expit(self.logits[:, idx].astype(np.float32))
            dz *= p * (1.0 - p)
        return np.abs(dz).max(axis=(0, 2)).astype(np.float64)

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

    def _product(self, v: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Logits (or their change along ``v``) ``Z @ W + b`` in float64, shape (n, len(idx), K)."""
        Wfull = self._weights(v, idx)
        mm, K = Wfull.shape[0], Wfull.shape[2]
        W2 = np.ascontiguousarray(Wfull[:, : self.r].transpose(1, 0, 2).reshape(self.r, mm * K))
        out = (self.Z @ W2.astype(self.Z.dtype)).reshape(self.n, mm, K).astype(LOSS_DTYPE)
        out += Wfull[:, self.r][None]
        return out

    def _penalty(self, v: np.ndarray, idx: np.ndarray) -> np.ndarray:
        W = self._weights(v, idx)[:, : self.r]
        return 0.5 * np.einsum("mrk,mrk,mk->m", W, W, self.lam[idx])

    def _loss_and_residual(self, logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Data losses (len(idx),) and their derivatives in the logits (n, len(idx), K)."""
        if self.multiclass:
            top = logits.max(axis=2, keepdims=True)
            E = np.exp(logits - top)
            total = E.sum(axis=2, keepdims=True)
            lse = np.log(total[..., 0]) + top[..., 0]
            loss = (lse.sum(axis=0) - np.einsum("nmk,nk->m", logits, self.Y)) * self.inv_n[0]
            E /= total
            E -= self.Y[:, None, :]
            E *= self.inv_n[0]
            return loss, E
        # softplus(z) - y z = -log σ(z) + (1 - y) z, stable for both signs
        assert self.mask is not None  # set for multilabel problems in __init__
        log_p = log_expit(logits)
        bce = (1.0 - self.Y)[:, None, :] * logits - log_p
        bce *= self.mask[:, None, :]
        R = np.exp(log_p, out=log_p)
        R -= self.Y[:, None, :]
        R *= (self.mask * self.inv_n)[:, None, :]
        return bce.sum(axis=0) @ self.inv_n, R

    def _grad(self, v: np.ndarray, idx: np.ndarray) -> np.ndarray:
        R = self._residual[:, idx]
        mm, K = R.shape[1], R.shape[2]
        R2 = R.reshape(self.n, mm * K).astype(self.Z.dtype)
        gW = (self.Z.T @ R2).reshape(self.r, mm, K).transpose(1, 0, 2).astype(LOSS_DTYPE)
        Wfull = self._weights(v, idx)
        gW += self.lam[idx][:, None, :] * Wfull[:, : self.r]
        grad = np.concatenate([gW, R.sum(axis=0)[:, None, :]], axis=1) * self.S[idx]
        return grad.reshape(mm, -1)
