"""Temperature scaling and vector scaling (Guo et al. 2017), fitted by maximum likelihood.

Multi-class: temperature ``softmax(z / T)``; vector scaling ``softmax(w ⊙ z + b)``.
Multi-label (per-label binary versions): temperature ``σ(z_l / T_l)``; vector scaling is
per-label Platt scaling ``σ(w_l z_l + b_l)``. Labels without both classes on the calibration
rows keep the identity map.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize, minimize_scalar
from scipy.special import expit, log_expit, log_softmax, softmax

from crsbench.calibration.base import CalibratorBase, labelled


def _nll_multiclass(Z: np.ndarray, Y: np.ndarray) -> float:
    return float(-(log_softmax(Z, axis=1) * Y).sum() / len(Z))


def _fit_temperature(nll) -> float:
    res = minimize_scalar(
        lambda t: nll(np.exp(t)), bounds=(-5.0, 5.0), method="bounded", options={"xatol": 1e-6}
    )
    return float(np.exp(res.x))


def _binary_ok(y: np.ndarray) -> bool:
    return y.size > 0 and 0 < y.sum() < y.size


class TemperatureScaling(CalibratorBase):
    """One temperature (per label for multi-label), bounded search on log T ∈ [−5, 5].

    Parameters
    ----------
    task : {"multiclass", "multilabel"}
    input : {"auto", "probs", "logits"}, default "auto"

    Attributes
    ----------
    temperature_ : float (multiclass) or ndarray of shape (L,) (multilabel)
    """

    def __init__(self, task: str = "multiclass", input: str = "auto") -> None:
        self.task = task
        self.input = input

    def _fit(self, Z, y):
        if self.task == "multiclass":
            Y = np.eye(Z.shape[1])[y]
            self.temperature_ = _fit_temperature(lambda T: _nll_multiclass(Z / T, Y))
            return
        temps = np.ones(Z.shape[1])
        for j in range(Z.shape[1]):
            m = labelled(y, j)
            z, t = Z[m, j], y[m, j]
            if _binary_ok(t):
                temps[j] = _fit_temperature(
                    lambda T, z=z, t=t: float(
                        -(t * log_expit(z / T) + (1 - t) * log_expit(-z / T)).mean()
                    )
                )
        self.temperature_ = temps

    def _predict(self, Z):
        if self.task == "multiclass":
            return softmax(Z / self.temperature_, axis=1)
        return expit(Z / self.temperature_[None, :])


class VectorScaling(CalibratorBase):
    """Per-class scale and bias on the logits (per-label Platt scaling for multi-label).

    Parameters
    ----------
    task : {"multiclass", "multilabel"}
    input : {"auto", "probs", "logits"}, default "auto"
    reg : float, default 1e-6
        Tiny L2 pull of (w, b) towards the identity (1, 0), for uniqueness.

    Attributes
    ----------
    scale_, bias_ : ndarray of shape (K,)
    """

    def __init__(self, task: str = "multiclass", input: str = "auto", reg: float = 1e-6) -> None:
        self.task = task
        self.input = input
        self.reg = reg

    def _fit(self, Z, y):
        K = Z.shape[1]
        if self.task == "multiclass":
            Y = np.eye(K)[y]

            def fun(v):
                w, b = v[:K], v[K:]
                L = Z * w + b
                P = softmax(L, axis=1)
                loss = -(log_softmax(L, axis=1) * Y).sum() / len(Z)
                G = (P - Y) / len(Z)
                reg = 0.5 * self.reg * (((w - 1) ** 2).sum() + (b**2).sum())
                grad = np.r_[(G * Z).sum(0) + self.reg * (w - 1), G.sum(0) + self.reg * b]
                return loss + reg, grad

            res = minimize(
                fun,
                np.r_[np.ones(K), np.zeros(K)],
                jac=True,
                method="BFGS",
                options={"maxiter": 1000, "gtol": 1e-9},
            )
            self.scale_, self.bias_ = res.x[:K], res.x[K:]
            return
        self.scale_, self.bias_ = np.ones(K), np.zeros(K)
        for j in range(K):
            m = labelled(y, j)
            z, t = Z[m, j], y[m, j]
            if not _binary_ok(t):
                continue

            def fun_j(v, z=z, t=t):
                L = v[0] * z + v[1]
                loss = -(t * log_expit(L) + (1 - t) * log_expit(-L)).mean()
                g = (expit(L) - t) / len(z)
                reg = 0.5 * self.reg * ((v[0] - 1) ** 2 + v[1] ** 2)
                return loss + reg, np.array(
                    [(g * z).sum() + self.reg * (v[0] - 1), g.sum() + self.reg * v[1]]
                )

            res = minimize(
                fun_j,
                np.array([1.0, 0.0]),
                jac=True,
                method="BFGS",
                options={"maxiter": 1000, "gtol": 1e-9},
            )
            self.scale_[j], self.bias_[j] = res.x

    def _predict(self, Z):
        L = Z * self.scale_ + self.bias_
        return softmax(L, axis=1) if self.task == "multiclass" else expit(L)
