"""Test images of each modality and model helpers, shared by the upstream-equivalence tests
(one home).

8-bit RGB, 8-bit grey, 16-bit grey and a narrow-range 8-bit grey: smooth gradients plus
seeded noise. Comparisons are in float32 with a max abs difference of at most :data:`TOL`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from PIL import Image

TOL = 1e-4
KINDS = ["rgb8", "grey8", "grey16", "narrow"]


def images(h: int, w: int) -> dict[str, np.ndarray]:
    """Real-looking test images of ``h`` x ``w`` pixels, one per kind in :data:`KINDS`."""
    rng = np.random.default_rng(7)
    yy, xx = np.mgrid[0:h, 0:w]
    base = 0.5 + 0.35 * np.sin(xx / 23.0) * np.cos(yy / 31.0)
    noisy = np.clip(base + rng.normal(0, 0.05, (h, w)), 0, 1)
    rgb = np.stack([noisy, noisy**1.3, 1 - noisy], -1)
    return {
        "rgb8": np.rint(rgb * 255).astype(np.uint8),
        "grey8": np.rint(noisy * 255).astype(np.uint8),
        "grey16": (np.rint(noisy * 4095) * 16).astype(np.uint16),
        "narrow": np.rint(90 + noisy * 50).astype(np.uint8),
    }


def as_tensor(a: np.ndarray) -> torch.Tensor:
    """``(1, C, H, W)`` uint8/uint16 tensor of an ``(H, W)`` or ``(H, W, 3)`` array."""
    t = torch.from_numpy(a.astype(np.int32) if a.dtype == np.uint16 else a)
    t = t.unsqueeze(0) if t.ndim == 2 else t.permute(2, 0, 1)
    return t.to(torch.uint16 if a.dtype == np.uint16 else torch.uint8).unsqueeze(0)


def as_8bit(a: np.ndarray) -> np.ndarray:
    """What the feature engine hands an encoder for a 16-bit file (decode: min..max to 0..255)."""
    from crsbench.features.decode import _to_array

    if a.dtype != np.uint16:
        return a
    return _to_array(Image.fromarray(a), Path("grey16.png"))


def max_abs_diff(mine: torch.Tensor, theirs: torch.Tensor) -> float:
    """Max abs difference of two tensors of the same shape (asserted)."""
    assert mine.shape == theirs.shape, (mine.shape, theirs.shape)
    return float((mine.float() - theirs.float()).abs().max())


def perturb(model: torch.nn.Module, seed: int = 5, scale: float = 0.05) -> None:
    """Move every parameter off its init, so that a load that did nothing is visible."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(scale * torch.randn(p.shape, generator=g))


def cached_pipelines(upstream_of, tmp_path_factory):  # type: ignore[no-untyped-def]
    """``get(name)``: crsbench's encoder loaded from the upstream checkpoint that
    ``upstream_of(name, folder)`` writes, the upstream pipeline, and the image's shorter side;
    each built once (a module-scoped fixture returns this)."""
    from crsbench.encoders import build

    cache: dict = {}

    def get(name: str):  # type: ignore[no-untyped-def]
        if name not in cache:
            torch.manual_seed(0)
            weights, upstream, side = upstream_of(name, tmp_path_factory.mktemp(name) / "up")
            cache[name] = (build(name, tiny=True, weights_path=weights), upstream, side)
        return cache[name]

    return get
