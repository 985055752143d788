"""Small deterministic stand-ins for the encoder registry and the perturbations.

Loaded by ``conftest.py`` here and by the SIGKILL test's subprocess script.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from crsbench.core.seeding import stable_rng


@dataclass(frozen=True)
class TinyCard:
    name: str = "tiny_test_cnn"
    input_size: int = 32
    revision: str = "test"


class TinyEncoder:
    """4-block CNN with taps at 25/50/75/100 % depth, weights from a fixed torch Generator."""

    def __init__(self, seed: int = 0, size: int = 32, delay: float = 0.0, scale: float = 1.0):
        import torch
        from torch import nn

        g = torch.Generator().manual_seed(seed)
        chans = [3, 4, 6, 8, 10]
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Conv2d(chans[i], chans[i + 1], 3, stride=2, padding=1), nn.ReLU())
            for i in range(4)
        )
        with torch.no_grad():
            for p in self.blocks.parameters():
                p.copy_(torch.randn(p.shape, generator=g) * 0.5)
        self.module = self.blocks.eval()
        self.card = TinyCard(input_size=size)
        self.device = "cpu"
        self.delay = delay
        self.scale = scale
        h = hashlib.sha256()
        for p in self.blocks.parameters():
            h.update(p.detach().numpy().tobytes())
        self.weights_hash = h.hexdigest()
        self.preprocess_hash = "scale255-center"
        self.embed_dim = 10
        self.tap_dims = {0.25: 4, 0.5: 6, 0.75: 8, 1.0: 10}
        self.n_forward = 0

    def preprocess(self, x):
        return x.float() / 255.0 - 0.5

    def forward_features(self, x, depths=(1.0,)):
        self.n_forward += 1
        if self.delay:
            time.sleep(self.delay)
        out = {}
        for i, blk in enumerate(self.blocks):
            x = blk(x)
            d = (i + 1) / 4
            if d in depths:
                out[d] = x.mean(dim=(2, 3)) * self.scale
        return out


def toy_perturb(image: np.ndarray, name: str, severity: int, image_id: str) -> np.ndarray:
    """Deterministic per-image noise seeded like docs/protocol.md section 5."""
    rng = stable_rng(image_id, name, severity)
    noise = rng.normal(0, 10 * severity, size=image.shape)
    return np.clip(image.astype(np.float64) + noise, 0, 255).astype(np.uint8)


def write_images(root: Path, n: int, size: int = 40, fmt: str = "png") -> tuple[list, list]:
    """n distinct RGB images; returns (ids, paths)."""
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1234)
    ids, paths = [], []
    for i in range(n):
        arr = rng.integers(0, 256, size=(size, size + 8, 3), dtype=np.uint8)
        arr[: size // 2] //= 1 + (i % 3)
        p = root / f"img_{i:04d}.{fmt}"
        Image.fromarray(arr).save(p)
        ids.append(f"id{i:04d}")
        paths.append(str(p))
    return ids, paths


def list_images(root: Path, n: int, fmt: str = "png") -> tuple[list, list]:
    """(ids, paths) of images :func:`write_images` wrote, without touching the files (a
    rewrite changes their mtime, hence the cache keys)."""
    return [f"id{i:04d}" for i in range(n)], [str(root / f"img_{i:04d}.{fmt}") for i in range(n)]


def run_extract(ids: list, paths: list, root: Path, **kw):
    """``extract`` with the tests' small settings and a fresh cache at ``root``.

    The encoder is a :class:`TinyEncoder` unless ``encoder=`` is given; any other keyword
    overrides a default. Precision is fp32 (the tests compare with fp32 references); the
    working size is pinned to the encoder's input size (the doubles' preprocessing does not
    resize), below the 224-px default floor, to keep the tests small.
    """
    from crsbench.features import ExtractSettings, FeatureCache, extract

    enc = kw.pop("encoder", None) or TinyEncoder()
    cache = kw.pop("cache", None) or FeatureCache(root)
    revision = kw.pop("dataset_revision", "rev1")
    args = dict(
        batch_size=4,
        shard_size=4,
        num_workers=0,
        progress=False,
        perturb_fn=toy_perturb,
        precision="fp32",
        working_size=enc.card.input_size,
    )
    args.update(kw)
    settings = ExtractSettings(**args)
    return extract(enc, ids, paths, cache=cache, dataset_revision=revision, settings=settings)
