"""Per-subset standardisation and PCA (whitening-ready) basis for the logistic solver.

The rows of one fit are standardised with their own mean and (population) standard deviation;
constant columns get scale 1. The centred matrix is rotated onto its principal axes, dropping
directions with (numerically) zero variance: the L2-regularised optimum has no weight there,
so the rotation is exact and handles duplicated and constant columns. When there are fewer
rows than features the basis comes from the n×n row Gram (the representer theorem).

The rotated features are computed in float64 and rounded to the working dtype once. A float32
product would round as it sums over the d features (about √d ulps of a row's terms), and the
fitted model, ``X · rot · W``, would then differ from the problem solved, ``Z · W``: on a
benchmark cell at C = 10-32 this moved the fitted probabilities by 1e-5 from the optimum's
(2.5-3.9e-6 with the rounding done once). With more rows than features the Gram matrix only
chooses the axes and the solver's preconditioner, so it stays in the working dtype. With fewer,
its eigenvalues also scale the axes (``rot = Xᵀu / √(n λ)``), which a float32 Gram leaves
orthonormal to about 1e-5 (measured 6.6e-6), more near the dropped directions: the penalty
there is then off by as much.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Basis:
    """Standardisation statistics and principal axes of the rows of one fit."""

    mean: np.ndarray  # (d,) float64
    scale: np.ndarray  # (d,) float64, 1 for constant columns
    rot: np.ndarray  # (d, r) orthonormal columns, in the working dtype
    eig: np.ndarray  # (r,) float64 eigenvalues of Z^T Z / n
    n_constant: int


def standardisation(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, scale (population standard deviation; 1 for a constant column) and the constant
    columns of the rows of one fit."""
    mean = X.mean(axis=0, dtype=np.float64)
    std = X.std(axis=0, dtype=np.float64)
    constant = std <= 1e-12 * np.maximum(1.0, np.abs(mean))
    return mean, np.where(constant, 1.0, std), constant


def build_basis(X: np.ndarray, dtype: type = np.float32) -> tuple[Basis, np.ndarray]:
    """Standardise ``X`` (rows of one fit) and rotate it; return the basis and Z (n × r)."""
    n, d = X.shape
    mean, scale, constant = standardisation(X)
    X64 = (X - mean) / scale
    X64[:, constant] = 0.0
    Xc = X64.astype(dtype, copy=False)
    rtol = 1e-5 if np.dtype(dtype) == np.float32 else 1e-11
    rot: np.ndarray
    if n > d:
        gram = (Xc.T @ Xc).astype(np.float64) / n
        w, q = np.linalg.eigh(gram)
        keep = w > rtol * max(w.max(), 1e-300)
        rot = np.ascontiguousarray(q[:, keep][:, ::-1]).astype(dtype)
        eig = w[keep][::-1]
    else:
        gram = (Xc @ Xc.T).astype(np.float64) / n
        w, u = np.linalg.eigh(gram)
        keep = w > rtol * max(w.max(), 1e-300)
        u = u[:, keep][:, ::-1]
        eig = w[keep][::-1]
        rot = ((X64.T @ u) / np.sqrt(n * eig)).astype(dtype)
    del Xc  # only the Gram reads the working-dtype copy
    Z = (X64 @ rot.astype(np.float64)).astype(dtype)  # rounded once
    basis = Basis(mean, scale, rot, eig, int(constant.sum()))
    return basis, np.ascontiguousarray(Z)
