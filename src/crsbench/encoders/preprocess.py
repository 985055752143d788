"""Batched, device-side preprocessing: uint8 N×C×H×W → normalised float N×3×S×S.

One rule per encoder (its card): ``crop`` (resize the shorter side to ``floor(S / crop_pct)``,
then centre-crop S, as timm/open_clip/torchvision eval transforms), ``squash`` (resize to S×S,
as SigLIP/MedGemma processors) or ``pad`` (pad to a centred square with ``pad_fill``, then the
``crop`` rule, as MedSigLIP, LLaVA-Med and CheXzero). Resizing uses antialiasing.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from crsbench.core.errors import EncoderError

if TYPE_CHECKING:
    import torch

PREPROCESS_VERSION = 1


@dataclass(frozen=True)
class Preprocessing:
    """Parameters of :func:`preprocess`; hashed into the feature-cache key."""

    input_size: int
    interpolation: str
    resize_mode: str
    crop_pct: float
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    pad_fill: tuple[float, float, float] = (0.0, 0.0, 0.0)
    grayscale: str = "replicate"
    antialias: bool = True
    version: int = PREPROCESS_VERSION

    def sha256(self) -> str:
        """sha256 of the canonical JSON of these parameters."""
        text = json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


def _resize(x: torch.Tensor, h: int, w: int, mode: str) -> torch.Tensor:
    import torch.nn.functional as F

    if (x.shape[-2], x.shape[-1]) == (h, w):
        return x
    if mode == "area":
        return F.interpolate(x, size=(h, w), mode="area")
    return F.interpolate(x, size=(h, w), mode=mode, align_corners=False, antialias=True)


def _pad_square(x: torch.Tensor, fill: tuple[float, float, float]) -> torch.Tensor:
    import torch

    n, c, h, w = x.shape
    side = max(h, w)
    if h == w:
        return x
    canvas = torch.tensor(fill, dtype=x.dtype, device=x.device).view(1, c, 1, 1)
    canvas = canvas.expand(n, c, side, side).clone()
    top, left = (side - h) // 2, (side - w) // 2
    canvas[:, :, top : top + h, left : left + w] = x
    return canvas


def preprocess(images: torch.Tensor, p: Preprocessing) -> torch.Tensor:
    """Resize and normalise a batch of 8-bit images on whatever device they live on.

    Parameters
    ----------
    images : torch.Tensor
        ``uint8`` tensor ``N×C×H×W`` with ``C`` 1 (grayscale, replicated to 3) or 3.
    p : Preprocessing
        The encoder's preprocessing parameters.

    Returns
    -------
    torch.Tensor
        ``float32`` ``N×3×S×S``.
    """
    import torch

    if not isinstance(images, torch.Tensor):
        raise EncoderError(
            f"images must be a torch.Tensor of shape N×C×H×W. Got {type(images).__name__} instead."
        )
    if images.dtype != torch.uint8:
        raise EncoderError(
            "images must be uint8 (0-255; convert 16-bit images by rescaling first). "
            f"Got dtype {images.dtype} instead."
        )
    if images.ndim != 4 or images.shape[1] not in (1, 3):
        raise EncoderError(
            f"images must have shape N×C×H×W with C in (1, 3). Got {tuple(images.shape)} instead."
        )
    if images.shape[0] == 0 or images.shape[2] == 0 or images.shape[3] == 0:
        raise EncoderError(f"images must be non-empty. Got shape {tuple(images.shape)} instead.")
    x = images.float().div_(255.0)
    if x.shape[1] == 1:
        x = x.expand(-1, 3, -1, -1)
    s = p.input_size
    if p.resize_mode == "pad":
        x = _pad_square(x, p.pad_fill)
    if p.resize_mode == "squash":
        x = _resize(x, s, s, p.interpolation)
    else:
        h, w = x.shape[-2:]
        short = math.floor(s / p.crop_pct)
        if h <= w:
            nh, nw = short, int(short * w / h)
        else:
            nh, nw = int(short * h / w), short
        x = _resize(x, nh, nw, p.interpolation)
        top, left = (nh - s) // 2, (nw - s) // 2
        x = x[:, :, top : top + s, left : left + s]
    mean = torch.tensor(p.mean, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
    std = torch.tensor(p.std, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
    return ((x - mean) / std).contiguous()
