"""Out-of-fold predictions of every (grid point, fold) fit of one CV selection, solved at once.

:func:`crsbench.calibration.selection.fit_recalibrator` scores each candidate of the protocol's
grid by the NLL of its pooled out-of-fold predictions: G candidates × F folds fits of one
calibrator. For Dirichlet calibration and vector scaling, :func:`oof_batched` fits all G × F
problems together with :func:`crsbench.calibration.batched_newton.newton_batch` (the fitting
rows of fold f are a 0/1 weight on the N rows; every problem is the same objective as the
calibrator's own fit on those rows) and returns the same out-of-fold probabilities as fitting
the calibrators one by one:

- Dirichlet: the same damped Newton as :func:`crsbench.calibration.dirichlet._newton`, to the
  same gradient tolerance; a problem Newton does not settle (or with λ = 0 or μ = 0) is fitted
  by the calibrator's own BFGS on its rows, exactly as the one-by-one fit would.
- Vector scaling: Newton to a gradient of :data:`VECTOR_GTOL` (1e-10), where the calibrator's
  own fit (BFGS) stops at 1e-9: the same optimum, reached more tightly; an unsettled problem is
  fitted by the calibrator itself.

Multi-label problems (one label, K = 1 column) whose fitting rows hold a single class keep the
identity map, as the calibrators do. Other methods return None (fitted one by one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from scipy.special import expit, log_expit, log_softmax, softmax

from crsbench.calibration import dirichlet
from crsbench.calibration.batched_newton import BatchObjective, newton_batch
from crsbench.calibration.scaling import VectorScaling

#: Newton's stopping rule for vector scaling (largest gradient entry).
VECTOR_GTOL = 1e-10
VECTOR_MAX_ITER = 100
#: Largest per-problem array (elements) of one Newton batch: problems are solved in chunks of
#: at most this many N·K² elements (32 MB of float64), so large calibration splits fit memory.
MAX_BATCH_ELEMENTS = 1 << 22

Folds = Sequence[tuple[np.ndarray, np.ndarray]]


def oof_batched(
    method: str,
    grid: Sequence[Mapping[str, float]],
    Z: np.ndarray,
    y: np.ndarray,
    task: str,
    folds: Folds,
) -> np.ndarray | None:
    """Out-of-fold probabilities (G, N, K) of every grid point, or None for other methods.

    Parameters
    ----------
    method : str
        ``"dirichlet"`` or ``"vector"`` (others: None).
    grid : sequence of parameter mappings
        The candidates (constructor keyword arguments of the calibrator).
    Z : ndarray (N, K)
        Logits (multi-label: one label's log-odds, K = 1, its labelled rows only).
    y : ndarray
        Class indices (N,) or one label's 0/1 column (N, 1).
    task : {"multiclass", "multilabel"}
    folds : sequence of (train, held) index arrays
    """
    if method not in ("dirichlet", "vector"):
        return None
    try:
        return _oof(method, grid, Z, y, task, folds)
    except np.linalg.LinAlgError:  # a singular Newton system: leave it to the calibrators
        return None


def _oof(method, grid, Z, y, task, folds) -> np.ndarray:
    G, F, N = len(grid), len(folds), Z.shape[0]
    mask = np.zeros((F, N))
    for f, (train, _) in enumerate(folds):
        mask[f, train] = 1.0
    if method == "dirichlet":
        X, Y = _dirichlet_design(Z, y, task)
        lam = np.array([float(p["reg_lambda"]) for p in grid])
        mu = np.array([float(p["reg_mu"]) for p in grid])
        theta = _fit_dirichlet(X, Y, mask, np.repeat(lam, F), np.repeat(mu, F), task)
        L = np.matmul(theta.reshape(G * F, Y.shape[1], -1), X.T).transpose(0, 2, 1)
        P = softmax(L, axis=2)
        P = P[:, :, 1:] if task == "multilabel" else P
    else:
        reg = np.repeat(np.array([float(p["reg"]) for p in grid]), F)
        theta = _fit_vector(Z, y, mask, reg, task, folds)
        K = Z.shape[1]
        L = Z[None] * theta[:, None, :K] + theta[:, None, K:]
        P = softmax(L, axis=2) if task == "multiclass" else expit(L)
    P = P.reshape(G, F, N, -1)
    oof = np.empty((G, *Z.shape))
    for f, (_, held) in enumerate(folds):
        oof[:, held] = P[:, f, held]
    return oof


def _dirichlet_design(Z: np.ndarray, y: np.ndarray, task: str) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``[ln p, 1]`` and one-hot targets, as the Dirichlet calibrator builds them."""
    if task == "multiclass":
        logp, Y = log_softmax(Z, axis=1), np.eye(Z.shape[1])[y]
    else:
        z = Z[:, 0]
        logp = np.column_stack([log_expit(-z), log_expit(z)])
        Y = np.eye(2)[y[:, 0].astype(int)]
    return np.column_stack([logp, np.ones(len(Z))]), Y


def _single_class(Y: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(F,) whether fold f's fitting rows hold only one of the two classes of a label."""
    pos = mask @ Y[:, -1]
    return (pos == 0) | (pos == mask.sum(axis=1))


def _fit_dirichlet(
    X: np.ndarray, Y: np.ndarray, mask: np.ndarray, lam: np.ndarray, mu: np.ndarray, task: str
) -> np.ndarray:
    """(B, K(K+1)) fitted ``[W | b]`` of the B = G × F problems (problem b uses fold b % F).

    Logits are kept as (b, K, N) so that every product is one matrix multiplication.
    """
    N, K = Y.shape
    F, B = mask.shape[0], len(lam)
    fold = np.arange(B) % F
    n = mask.sum(axis=1)[fold]
    W = mask[:, None, :]  # (F, 1, N)
    YW = Y.T[None] * W  # (F, K, N)
    R = np.stack([dirichlet._penalty(K, a, m) for a, m in zip(lam, mu, strict=True)])
    XT = np.ascontiguousarray(X.T)
    ku, lu = np.triu_indices(K)
    cu, du = np.triu_indices(K + 1)
    outer = X[:, cu] * X[:, du]  # the products x_c x_d, c ≤ d

    def value(theta, idx):
        T = theta.reshape(len(idx), K, K + 1)
        ls = _log_softmax(np.matmul(T, XT))
        nll = -(ls * YW[fold[idx]]).sum(axis=(1, 2)) / n[idx]
        return nll + (R[idx] * T**2).sum(axis=(1, 2)), ls

    def derivatives(theta, ls, idx):
        b, m = len(idx), n[idx, None, None]
        P = np.exp(ls)
        Wt = W[fold[idx]]
        g = np.matmul(P * Wt - YW[fold[idx]], X) / m + 2.0 * R[idx] * theta.reshape(b, K, -1)
        # Hessian block (k, l) = Σ_i w_i (p_ik δ_kl − p_ik p_il) x_i x_iᵀ / n: symmetric in
        # (k, l) and within a block, so only k ≤ l and c ≤ d are computed
        Pw = P * Wt
        S = np.empty((b, len(ku), N))  # the pairs k ≤ l (a loop: gathers cost ~10× more)
        for i, (k, j) in enumerate(zip(ku, lu, strict=True)):
            np.multiply(Pw[:, k], P[:, j], out=S[:, i])
            np.subtract(Pw[:, k] if k == j else 0.0, S[:, i], out=S[:, i])
        M = (S.reshape(-1, N) @ outer).reshape(b, len(ku), len(cu)) / m
        H = np.empty((b, K, K, K + 1, K + 1))
        for r, q, c, d in ((ku, lu, cu, du), (lu, ku, cu, du), (ku, lu, du, cu), (lu, ku, du, cu)):
            H[:, r[:, None], q[:, None], c, d] = M
        H = H.transpose(0, 1, 3, 2, 4).reshape(b, K * (K + 1), -1)
        return g.reshape(b, -1), H + _diag(2.0 * R[idx].reshape(b, -1))

    T0 = np.tile(np.column_stack([np.eye(K), np.zeros(K)]).ravel(), (B, 1))
    skip = _single_class(Y, mask)[fold] if task == "multilabel" else np.zeros(B, dtype=bool)
    newton = (lam > 0) & (mu > 0) & ~skip
    objective = BatchObjective(value, derivatives)
    gtol, max_iter = dirichlet.NEWTON_GTOL, dirichlet.NEWTON_MAX_ITER
    theta, ok = _newton_chunked(objective, T0, gtol, max_iter, newton, N * K * K)
    for i in np.flatnonzero(~ok & ~skip):
        rows = mask[fold[i]] > 0
        Wi, bi = dirichlet._bfgs(X[rows, :K], Y[rows], lam[i], mu[i], 1000)
        theta[i] = np.column_stack([Wi, bi]).ravel()
    return theta


def _fit_vector(
    Z: np.ndarray, y: np.ndarray, mask: np.ndarray, reg: np.ndarray, task: str, folds: Folds
) -> np.ndarray:
    """(B, 2K) fitted ``(scale, bias)`` of the B = G × F problems (problem b uses fold b % F)."""
    N, K = Z.shape
    F, B = mask.shape[0], len(reg)
    fold = np.arange(B) % F
    n = mask.sum(axis=1)[fold]
    if task == "multiclass":
        objective = _vector_multiclass(Z, np.eye(K)[y], mask, fold, n, reg)
        skip = np.zeros(B, dtype=bool)
    else:
        objective = _vector_binary(Z[:, 0], y[:, 0], mask, fold, n, reg)
        skip = _single_class(y, mask)[fold]
    theta0 = np.tile(np.r_[np.ones(K), np.zeros(K)], (B, 1))
    theta, ok = _newton_chunked(objective, theta0, VECTOR_GTOL, VECTOR_MAX_ITER, ~skip, N * K * K)
    for i in np.flatnonzero(~ok & ~skip):
        train = folds[fold[i]][0]
        c = VectorScaling(task=task, input="logits", reg=float(reg[i])).fit(Z[train], y[train])
        theta[i] = np.r_[c.scale_, c.bias_]
    return theta


def _vector_multiclass(Z, Y, mask, fold, n, reg) -> BatchObjective:
    """Mean NLL of ``softmax(w ⊙ z + b)`` + ``0.5·reg·(‖w − 1‖² + ‖b‖²)``."""
    N, K = Z.shape
    W = mask[:, :, None]
    YW = Y[None] * W
    eye = np.eye(K)
    ZZ = Z[:, :, None] * Z[:, None, :]

    def value(theta, idx):
        w, b = theta[:, :K], theta[:, K:]
        L = Z[None] * w[:, None, :] + b[:, None, :]
        nll = -(log_softmax(L, axis=2) * YW[fold[idx]]).sum(axis=(1, 2)) / n[idx]
        pen = 0.5 * reg[idx] * (((w - 1) ** 2).sum(axis=1) + (b**2).sum(axis=1))
        return nll + pen, L

    def derivatives(theta, L, idx):
        w, b = theta[:, :K], theta[:, K:]
        r, m = reg[idx, None], n[idx, None]
        P = softmax(L, axis=2)
        Wt = W[fold[idx]]
        G = (P * Wt - YW[fold[idx]]) / m[:, :, None]
        g = np.concatenate([(G * Z[None]).sum(axis=1) + r * (w - 1), G.sum(axis=1) + r * b], 1)
        S = (P[:, :, :, None] * eye - P[:, :, :, None] * P[:, :, None, :]) * Wt[:, :, :, None]
        S = S / m[:, :, None, None]
        Hww = np.einsum("bnkl,nkl->bkl", S, ZZ)
        Hwb = np.einsum("bnkl,nk->bkl", S, Z)
        Hbb = S.sum(axis=1)
        H = np.block([[Hww, Hwb], [Hwb.transpose(0, 2, 1), Hbb]])
        return g, H + _diag(np.broadcast_to(r, (len(idx), 2 * K)))

    return BatchObjective(value, derivatives)


def _vector_binary(z, t, mask, fold, n, reg) -> BatchObjective:
    """Mean binary cross-entropy of ``σ(w·z + b)`` + ``0.5·reg·((w − 1)² + b²)`` (one label)."""

    def value(theta, idx):
        L = theta[:, :1] * z[None] + theta[:, 1:]
        m = mask[fold[idx]]
        ce = -((t * log_expit(L) + (1 - t) * log_expit(-L)) * m).sum(axis=1) / n[idx]
        pen = 0.5 * reg[idx] * ((theta[:, 0] - 1) ** 2 + theta[:, 1] ** 2)
        return ce + pen, L

    def derivatives(theta, L, idx):
        r, m = reg[idx], mask[fold[idx]] / n[idx, None]
        p = expit(L)
        G = (p - t) * m
        g = np.column_stack([(G * z).sum(1) + r * (theta[:, 0] - 1), G.sum(1) + r * theta[:, 1]])
        s = p * (1 - p) * m
        hzz, hz, h1 = (s * z * z).sum(1) + r, (s * z).sum(1), s.sum(1) + r
        return g, np.stack([np.column_stack([hzz, hz]), np.column_stack([hz, h1])], axis=1)

    return BatchObjective(value, derivatives)


def _newton_chunked(
    objective: BatchObjective,
    theta0: np.ndarray,
    gtol: float,
    max_iter: int,
    eligible: np.ndarray,
    elements: int,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`newton_batch` over chunks of the eligible problems (``elements`` per problem)."""
    idx = np.flatnonzero(eligible)
    size = max(1, MAX_BATCH_ELEMENTS // max(elements, 1))
    theta, ok = theta0.copy(), np.zeros(len(theta0), dtype=bool)
    for start in range(0, len(idx), size):
        chunk = np.zeros(len(theta0), dtype=bool)
        chunk[idx[start : start + size]] = True
        solved, converged = newton_batch(objective, theta0, gtol, max_iter, chunk)
        theta[chunk], ok[chunk] = solved[chunk], converged[chunk]
    return theta, ok


def _log_softmax(L: np.ndarray) -> np.ndarray:
    """Log-softmax over axis 1 (plain numpy: scipy's adds ~ms of overhead per call)."""
    Lm = L - L.max(axis=1, keepdims=True)
    return Lm - np.log(np.exp(Lm).sum(axis=1, keepdims=True))


def _diag(d: np.ndarray) -> np.ndarray:
    """Batch of diagonal matrices (b, P, P) from their diagonals (b, P)."""
    out = np.zeros((*d.shape, d.shape[-1]))
    idx = np.arange(d.shape[-1])
    out[:, idx, idx] = d
    return out
