"""Torch perturbations agree with the numpy reference (CPU here; CUDA under -m gpu)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from crsbench.core.errors import DataError
from crsbench.perturb import apply_batch

torch = pytest.importorskip("torch")
from crsbench.perturb.torch_ops import NATIVE, apply_torch  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "_perturb_images", Path(__file__).with_name("_perturb_images.py")
)
_images = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_images)

GRAY = np.stack([_images.chest_xray(96, seed=s) for s in range(2)])
RGB = np.stack([_images.dermoscopy(96, seed=2), _images.fundus(96, seed=1)])
IDS = ["a.png", "b.png"]


def _check(device: str) -> None:
    for batch in (GRAY, RGB):
        for name in NATIVE:
            for severity in (0, 1, 2, 3):
                ref = apply_batch(batch, name, severity, IDS)
                got = apply_torch(torch.from_numpy(batch).to(device), name, severity, IDS)
                assert got.dtype == torch.uint8 and tuple(got.shape) == batch.shape
                assert str(got.device).startswith(device)
                diff = np.abs(got.cpu().numpy().astype(int) - ref.astype(int))
                assert diff.max() <= 1, (name, severity, diff.max())
                assert diff.mean() < 0.25, (name, severity, diff.mean())  # PIL uses fixed point


def test_native_ops_match_numpy_on_cpu():
    _check("cpu")


@pytest.mark.gpu
def test_native_ops_match_numpy_on_cuda():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    _check("cuda")


@pytest.mark.parametrize("name", ["jpeg", "rician", "poisson_gaussian"])
def test_fallback_is_byte_identical(name):
    got = apply_torch(torch.from_numpy(RGB), name, 2, IDS)
    np.testing.assert_array_equal(got.numpy(), apply_batch(RGB, name, 2, IDS))


def test_torch_bad_inputs():
    with pytest.raises(DataError, match="uint8 tensor"):
        apply_torch(torch.zeros(2, 8, 8), "contrast", 1)
    with pytest.raises(DataError, match="3 channels last"):
        apply_torch(torch.zeros(2, 3, 8, 8, dtype=torch.uint8), "contrast", 1)
    with pytest.raises(DataError, match="needs image_ids"):
        apply_torch(torch.from_numpy(GRAY), "rician", 1)
    with pytest.raises(DataError, match="torch.Tensor"):
        apply_torch(GRAY, "contrast", 1)
