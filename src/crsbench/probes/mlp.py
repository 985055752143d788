"""Two-layer MLP control probe (one hidden ReLU layer) in numpy, with early stopping.

Adam on mini-batches, L2 weight decay ``weight_decay``, inputs standardised with the training rows'
statistics. Early stopping monitors the validation loss (NLL; masked BCE for multi-label):
the given ``(X_val, y_val)`` or, if none, a seeded ``validation_fraction`` of the training
rows; training stops after ``patience`` epochs without improvement and the best weights are
restored. Every random choice (init, split, batch order) comes from ``random_state``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy.special import expit, log_expit, log_softmax, softmax

from crsbench.core.validation import check_features, check_targets
from crsbench.probes.base import ProbeBase
from crsbench.protocol import MLP_EPOCHS, MLP_HIDDEN_SIZE, MLP_LR, MLP_WEIGHT_DECAY


class MLPProbe(ProbeBase):
    """One-hidden-layer MLP probe with the scikit-learn estimator contract.

    The settings a config sets (``probes.mlp``) have the config's names and the protocol's
    defaults (:mod:`crsbench.protocol`).

    Parameters
    ----------
    hidden_size : int, default 256
        Width of the hidden layer.
    epochs : int, default 100
        Maximum training epochs (early stopping may end sooner).
    lr : float, default 1e-3
        Adam learning rate.
    weight_decay : float, default 1e-4
        L2 penalty on the weights (not the biases).
    batch_size : int, default 256
    patience : int, default 10
    validation_fraction : float, default 0.1
        Used only when ``fit`` gets no validation set.
    random_state : int, default 0
    task : {"multiclass", "multilabel"}, default "multiclass"
    n_outputs : int, optional
    """

    def __init__(
        self,
        hidden_size: int = MLP_HIDDEN_SIZE,
        epochs: int = MLP_EPOCHS,
        lr: float = MLP_LR,
        weight_decay: float = MLP_WEIGHT_DECAY,
        batch_size: int = 256,
        patience: int = 10,
        validation_fraction: float = 0.1,
        random_state: int = 0,
        task: str = "multiclass",
        n_outputs: int | None = None,
    ) -> None:
        self.hidden_size = hidden_size
        self.epochs = epochs
        self.lr = lr
        self.weight_decay = weight_decay
        self.batch_size = batch_size
        self.patience = patience
        self.validation_fraction = validation_fraction
        self.random_state = random_state
        self.task = task
        self.n_outputs = n_outputs

    def _check_params(self) -> None:
        for name in ("hidden_size", "batch_size", "epochs", "patience"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name} must be a positive integer. Got {v!r} instead.")
        for name in ("weight_decay", "lr"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or v < 0 or (name == "lr" and v == 0):
                raise ValueError(
                    f"{name} must be a non-negative float (lr > 0). Got {v!r} instead."
                )
        if not 0.0 < self.validation_fraction < 1.0:
            raise ValueError(
                f"validation_fraction must be in (0, 1). Got {self.validation_fraction!r} instead."
            )

    def _targets(self, y: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        if self.task == "multiclass":
            Y = np.zeros((len(y), k))
            Y[np.arange(len(y)), y] = 1.0
            return Y, np.ones_like(Y)
        return np.nan_to_num(y), (~np.isnan(y)).astype(np.float64)

    def _forward(self, params, X):
        W1, b1, W2, b2 = params
        H = np.maximum(X @ W1 + b1, 0.0)
        return H, H @ W2 + b2

    def _loss(self, logits, Y, M) -> float:
        if self.task == "multiclass":
            return float(-(log_softmax(logits, axis=1) * Y).sum() / len(Y))
        bce = -(Y * log_expit(logits) + (1 - Y) * log_expit(-logits)) * M
        return float((bce.sum(axis=0) / np.maximum(M.sum(axis=0), 1)).mean())

    def fit(
        self,
        X: npt.ArrayLike,
        y: npt.ArrayLike,
        X_val: npt.ArrayLike | None = None,
        y_val: npt.ArrayLike | None = None,
    ) -> MLPProbe:
        """Train with early stopping on ``(X_val, y_val)`` or a held-out share of ``X``."""
        self._check_params()
        X, y, k = self._prepare(X, y, self.n_outputs)
        rng = np.random.default_rng(self.random_state)
        if X_val is not None and y_val is not None:
            Xv = check_features(X_val, "X_val", X.shape[1]).astype(np.float64)
            yv = check_targets(y_val, self.task, Xv.shape[0], "y_val", k)
            Xt, yt = X.astype(np.float64), y  # standardised in float64, trained in float32
        else:
            perm = rng.permutation(X.shape[0])
            n_val = max(1, int(round(self.validation_fraction * X.shape[0])))
            Xv, yv = X[perm[:n_val]].astype(np.float64), y[perm[:n_val]]
            Xt, yt = X[perm[n_val:]].astype(np.float64), y[perm[n_val:]]
        self.mean_ = Xt.mean(axis=0)
        std = Xt.std(axis=0)
        self.scale_ = np.where(std > 0, std, 1.0)
        Xt = ((Xt - self.mean_) / self.scale_).astype(np.float32)
        Xv = ((Xv - self.mean_) / self.scale_).astype(np.float32)
        Yt, Mt = self._targets(yt, k)
        Yv, Mv = self._targets(yv, k)
        d, h = X.shape[1], int(self.hidden_size)
        params: list[np.ndarray] = [
            rng.normal(0.0, np.sqrt(2.0 / d), (d, h)).astype(np.float32),
            np.zeros(h, dtype=np.float32),
            rng.normal(0.0, np.sqrt(1.0 / h), (h, k)).astype(np.float32),
            np.zeros(k, dtype=np.float32),
        ]
        Yt, Yv = Yt.astype(np.float32), Yv.astype(np.float32)
        Mt, Mv = Mt.astype(np.float32), Mv.astype(np.float32)
        m1 = [np.zeros_like(p) for p in params]
        m2 = [np.zeros_like(p) for p in params]
        best = (np.inf, [p.copy() for p in params], 0)
        step = 0
        bad_epochs = 0
        self.loss_curve_: list[float] = []
        for epoch in range(int(self.epochs)):
            order = rng.permutation(len(Xt))
            for start in range(0, len(order), int(self.batch_size)):
                bi = order[start : start + int(self.batch_size)]
                grads = self._grads(params, Xt[bi], Yt[bi], Mt[bi])
                step += 1
                for i, g in enumerate(grads):
                    m1[i] = 0.9 * m1[i] + 0.1 * g
                    m2[i] = 0.999 * m2[i] + 0.001 * g * g
                    mh = m1[i] / (1 - 0.9**step)
                    vh = m2[i] / (1 - 0.999**step)
                    params[i] = params[i] - self.lr * mh / (np.sqrt(vh) + 1e-8)
            val = self._loss(self._forward(params, Xv)[1], Yv, Mv)
            self.loss_curve_.append(val)
            if val < best[0] - 1e-6:
                best = (val, [p.copy() for p in params], epoch + 1)
                bad_epochs = 0
            else:
                bad_epochs += 1
                if bad_epochs >= self.patience:
                    break
        self.params_ = best[1]
        self.best_val_loss_ = best[0]
        self.best_epoch_ = best[2]
        self.n_epochs_ = len(self.loss_curve_)
        self._set_fitted(X.shape[1], k)
        return self

    def _grads(self, params, X, Y, M):
        W1, _, W2, _ = params
        H, logits = self._forward(params, X)
        if self.task == "multiclass":
            G = (softmax(logits, axis=1) - Y) / len(Y)
        else:
            G = (expit(logits) - Y) * M / np.maximum(M.sum(axis=0), 1)[None, :] / Y.shape[1]
        gW2 = H.T @ G + self.weight_decay * W2
        gb2 = G.sum(axis=0)
        GH = (G @ W2.T) * (H > 0)
        gW1 = X.T @ GH + self.weight_decay * W1
        gb1 = GH.sum(axis=0)
        return [gW1, gb1, gW2, gb2]

    def _predict_proba(self, X: np.ndarray) -> np.ndarray:
        Z = ((X.astype(np.float64) - self.mean_) / self.scale_).astype(np.float32)
        logits = self._forward(self.params_, Z)[1].astype(np.float64)
        return softmax(logits, axis=1) if self.task == "multiclass" else expit(logits)
