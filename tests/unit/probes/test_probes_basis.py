"""The probe's rotated basis: the features the solver fits are the model it returns.

``build_basis`` standardises the rows of one fit, rotates them onto their principal axes and
hands the solver ``Z`` in the working dtype; the fitted model is ``X · rot · W`` in float64.
Each entry of a float32 ``Z`` must be the float64 rotation rounded once (a float32 product
rounds as it sums over the d features, about √d ulps, and the problem solved then differs from
the model returned).
"""

from __future__ import annotations

import numpy as np
import pytest

from crsbench.probes._basis import build_basis


def _features(n: int, d: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    mixing = rng.normal(size=(d, d)) * np.arange(1, d + 1) ** -0.6
    return (rng.normal(size=(n, d)) @ mixing * 3.0 + rng.normal(size=d) * 5).astype(np.float32)


@pytest.mark.parametrize(
    ("n", "d"), [(900, 300), (200, 300)], ids=["rows>features", "rows<=features"]
)
def test_float32_features_are_the_float64_rotation_rounded_once(n, d):
    X = _features(n, d)
    basis, Z = build_basis(X, np.float32)
    assert Z.dtype == np.float32 and Z.flags.c_contiguous
    exact = ((X - basis.mean) / basis.scale) @ basis.rot.astype(np.float64)
    np.testing.assert_array_equal(Z, exact.astype(np.float32))
    # what a float32 product gives instead: many entries off by more than the rounding
    Xc = ((X - basis.mean) / basis.scale).astype(np.float32)
    assert np.mean(Xc @ basis.rot != Z) > 0.3


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_basis_is_orthonormal_and_diagonalises_the_rows(dtype):
    X = _features(900, 120, seed=1)
    basis, Z = build_basis(X, dtype)
    rot = basis.rot.astype(np.float64)
    np.testing.assert_allclose(rot.T @ rot, np.eye(rot.shape[1]), atol=1e-5)
    gram = Z.astype(np.float64).T @ Z.astype(np.float64) / len(X)
    np.testing.assert_allclose(np.diag(gram), basis.eig, rtol=1e-4)
    off = gram - np.diag(np.diag(gram))
    assert np.abs(off).max() <= 1e-4 * basis.eig.max()
