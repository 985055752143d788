"""Batched, device-side preprocessing: uint8 N×C×H×W → normalised float N×3×S×S.

One rule per encoder (its card): ``crop`` (resize the shorter side to ``floor(S / crop_pct)``,
then centre-crop S, as timm/open_clip/torchvision eval transforms), ``squash`` (resize to S×S,
as SigLIP/MedGemma processors) or ``pad`` (pad to a centred square with ``pad_fill``, then the
``crop`` rule, as MedSigLIP's serving code, LLaVA-Med and CheXzero). Resizing uses
antialiasing unless ``antialias`` is False. An odd crop margin is split the upstream way
(``crop_rounding``: torchvision's half-to-even rounding, or transformers' floor).

Steps some authors add, in their order (:mod:`crsbench.encoders.pixel_steps`):
``intensity="minmax"`` stretches each image to 0..255 first and ``luma`` converts it to one
grey channel (BioViL's loader); ``grey_pad_fill`` pads grey images with their own colour
(LLaVA-Med pads 'L' images with grey 114); ``requantise`` resizes with TensorFlow's
bilinear kernel in 0..255 and truncates to 8 bits (MedSigLIP's model-card recipe).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from crsbench.core.errors import EncoderError
from crsbench.encoders import pixel_steps

if TYPE_CHECKING:
    import torch

PREPROCESS_VERSION = 3


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
    intensity: str = "none"
    luma: bool = False
    grey_pad_fill: tuple[float, float, float] | None = None
    requantise: bool = False
    crop_rounding: str = "half_even"
    version: int = PREPROCESS_VERSION

    def sha256(self) -> str:
        """sha256 of the canonical JSON of these parameters."""
        text = json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


def _resize(x: torch.Tensor, h: int, w: int, mode: str, antialias: bool = True) -> torch.Tensor:
    import torch.nn.functional as F

    if (x.shape[-2], x.shape[-1]) == (h, w):
        return x
    if mode == "area":
        return F.interpolate(x, size=(h, w), mode="area")
    return F.interpolate(x, size=(h, w), mode=mode, align_corners=False, antialias=antialias)


def _pad_square(x: torch.Tensor, fill: torch.Tensor) -> torch.Tensor:
    """Centre ``x`` on a square canvas; ``fill`` is ``N×3`` (one colour per image)."""
    n, c, h, w = x.shape
    side = max(h, w)
    if h == w:
        return x
    canvas = fill.to(dtype=x.dtype, device=x.device).view(n, c, 1, 1)
    canvas = canvas.expand(n, c, side, side).clone()
    top, left = (side - h) // 2, (side - w) // 2
    canvas[:, :, top : top + h, left : left + w] = x
    return canvas


def _check(images: torch.Tensor) -> None:
    import torch

    if not isinstance(images, torch.Tensor):
        raise EncoderError(
            f"images must be a torch.Tensor of shape N×C×H×W. Got {type(images).__name__} instead."
        )
    if images.dtype not in (torch.uint8, torch.uint16):
        raise EncoderError(
            "images must be uint8 (0-255) or uint16 (0-65535; grey 16-bit images). "
            f"Got dtype {images.dtype} instead."
        )
    if images.ndim != 4 or images.shape[1] not in (1, 3):
        raise EncoderError(
            f"images must have shape N×C×H×W with C in (1, 3). Got {tuple(images.shape)} instead."
        )
    if images.shape[0] == 0 or images.shape[2] == 0 or images.shape[3] == 0:
        raise EncoderError(f"images must be non-empty. Got shape {tuple(images.shape)} instead.")


def _authors_steps(images: torch.Tensor, p: Preprocessing) -> torch.Tensor:
    """The integer steps before scaling: min–max stretch, then luma (BioViL's loader order)."""
    import torch

    if p.intensity == "minmax":
        images = pixel_steps.minmax_uint8(images)
    elif p.intensity != "none":
        raise EncoderError(f"intensity must be 'none' or 'minmax'. Got {p.intensity!r} instead.")
    if p.luma:
        if images.dtype != torch.uint8 and images.shape[1] == 3:
            raise EncoderError("luma needs 8-bit colour images (set intensity='minmax' first)")
        images = pixel_steps.luma(images)
    return images


def _fills(u: torch.Tensor, p: Preprocessing) -> torch.Tensor:
    """``N×3`` padding colours: ``grey_pad_fill`` for grey images when set, else ``pad_fill``."""
    import torch

    colour = torch.tensor(p.pad_fill, dtype=torch.float32, device=u.device)
    fill = colour.expand(u.shape[0], 3).clone()
    if p.grey_pad_fill is not None:
        grey = torch.tensor(p.grey_pad_fill, dtype=torch.float32, device=u.device)
        fill[pixel_steps.grey_mask(u)] = grey
    return fill


def _geometry(x: torch.Tensor, p: Preprocessing) -> torch.Tensor:
    """Squash to S×S, or resize the shorter side to ``floor(S / crop_pct)`` and centre-crop."""
    s = p.input_size
    if p.resize_mode == "squash":
        if p.requantise:
            return pixel_steps.tf_bilinear(x, s, s) if x.shape[-2:] != (s, s) else x
        return _resize(x, s, s, p.interpolation, p.antialias)
    h, w = x.shape[-2:]
    short = math.floor(s / p.crop_pct)
    if h <= w:
        nh, nw = short, int(short * w / h)
    else:
        nh, nw = int(short * h / w), short
    x = _resize(x, nh, nw, p.interpolation, p.antialias)
    top, left = crop_offset(nh - s, p.crop_rounding), crop_offset(nw - s, p.crop_rounding)
    return x[:, :, top : top + s, left : left + s]


def crop_offset(margin: int, rounding: str) -> int:
    """Start of a centre crop that leaves ``margin`` pixels: ``floor(margin / 2)`` (transformers'
    ``center_crop``) or ``int(round(margin / 2.0))``, half to even (torchvision's ``CenterCrop``).

    Examples
    --------
    >>> [crop_offset(m, "half_even") for m in (1, 2, 3, 5, 7)]
    [0, 1, 2, 2, 4]
    >>> [crop_offset(m, "floor") for m in (1, 2, 3, 5, 7)]
    [0, 1, 1, 2, 3]
    """
    if rounding == "floor":
        return margin // 2
    if rounding == "half_even":
        return int(round(margin / 2.0))
    raise EncoderError(f"crop_rounding must be 'half_even' or 'floor'. Got {rounding!r} instead.")


def preprocess(images: torch.Tensor, p: Preprocessing) -> torch.Tensor:
    """Resize and normalise a batch of 8- or 16-bit images on whatever device they live on.

    Parameters
    ----------
    images : torch.Tensor
        ``uint8`` (or ``uint16``) tensor ``N×C×H×W`` with ``C`` 1 (grey, replicated to 3) or 3.
        16-bit values are divided by 65535 unless the card stretches them (``minmax``).
    p : Preprocessing
        The encoder's preprocessing parameters.

    Returns
    -------
    torch.Tensor
        ``float32`` ``N×3×S×S``.
    """
    import torch

    _check(images)
    u = _authors_steps(images, p)
    top = 65535.0 if u.dtype == torch.uint16 else 255.0
    # requantise works in 0..255 (TF resizes the 8-bit values, then truncates them)
    x = u.float() * (255.0 / top) if p.requantise else u.float().div_(top)
    if x.shape[1] == 1:
        x = x.expand(-1, 3, -1, -1)
    if p.resize_mode == "pad":
        fill = _fills(u, p)
        x = _pad_square(x, fill * 255.0 if p.requantise else fill)
    x = _geometry(x, p)
    if p.requantise:
        x = torch.floor(x).div_(255.0)
    mean = torch.tensor(p.mean, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
    std = torch.tensor(p.std, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
    return ((x - mean) / std).contiguous()
