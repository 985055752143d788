"""Per-subset standardisation and PCA (whitening-ready) basis for the logistic solver.

The rows of one fit are standardised with their own mean and (population) standard deviation;
constant columns get scale 1. The centred matrix is rotated onto its principal axes, dropping
directions with (numerically) zero variance: the L2-regularised optimum has no weight there,
so the rotation is exact and handles duplicated and constant columns. When there are fewer
rows than features the basis comes from the n×n row Gram (the representer theorem).
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

    def transform(self, X: np.ndarray) -> np.ndarray:
        """Rows of ``X`` in the rotated, standardised coordinates (n × r)."""
        dtype = self.rot.dtype
        Xs = ((X - self.mean) / self.scale).astype(dtype, copy=False)
        return Xs @ self.rot


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
    Xc = ((X - mean) / scale).astype(dtype)
    Xc[:, constant] = 0.0
    rtol = 1e-5 if np.dtype(dtype) == np.float32 else 1e-11
    rot: np.ndarray
    if n > d:
        gram = (Xc.T @ Xc).astype(np.float64) / n
        w, q = np.linalg.eigh(gram)
        keep = w > rtol * max(w.max(), 1e-300)
        rot = np.ascontiguousarray(q[:, keep][:, ::-1]).astype(dtype)
        eig = w[keep][::-1]
        Z = Xc @ rot
    else:
        gram = (Xc @ Xc.T).astype(np.float64) / n
        w, u = np.linalg.eigh(gram)
        keep = w > rtol * max(w.max(), 1e-300)
        u = u[:, keep][:, ::-1]
        eig = w[keep][::-1]
        root = np.sqrt(n * eig)
        rot = ((Xc.T.astype(np.float64) @ u) / root).astype(dtype)
        Z = (u * root).astype(dtype)
    basis = Basis(mean, scale, rot, eig, int(constant.sum()))
    return basis, np.ascontiguousarray(Z)
