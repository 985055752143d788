"""Torch versions of the deterministic perturbations, for perturbing on the GPU.

``torch`` is imported lazily, inside the functions. Blur, contrast and field-of-view crop
run natively on the tensor's device in float32 and match the numpy reference within one grey
level (tested). Everything else (JPEG, and the noise perturbations, whose random streams are
defined by numpy's PCG64 seeded per image, docs/protocol.md section 5) falls back to
:func:`crsbench.perturb.apply_batch` on the CPU so that the bytes are exactly the reference
ones, and the result is moved back to the input's device.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from crsbench.core.errors import DataError
from crsbench.perturb.api import TableLike, _resolve, apply_batch
from crsbench.perturb.ops import LUMA, crop_box

if TYPE_CHECKING:  # pragma: no cover
    import torch

NATIVE: tuple[str, ...] = ("gaussian_blur", "contrast", "fov_crop")


def _symmetric_index(n: int, radius: int, device: Any) -> torch.Tensor:
    """Indices of a half-sample symmetric padding (scipy ``mode="reflect"``) of length n."""
    import torch

    i = torch.arange(-radius, n + radius, device=device)
    m = torch.remainder(i, 2 * n)
    return torch.where(m >= n, 2 * n - 1 - m, m)


def _gaussian_kernel(sigma: float, device: Any) -> torch.Tensor:
    """scipy.ndimage's sampled Gaussian (truncate 4.0), normalised, float32."""
    import torch

    radius = int(4.0 * sigma + 0.5)
    t = torch.arange(-radius, radius + 1, dtype=torch.float64, device=device)
    k = torch.exp(-0.5 * (t / sigma) ** 2)
    return (k / k.sum()).to(torch.float32)


def _blur(x: torch.Tensor, fraction: float) -> torch.Tensor:
    """x: (N, C, H, W) float32."""
    import torch.nn.functional as F

    _, c, h, w = x.shape
    sigma = fraction * min(h, w)
    if sigma <= 0:
        return x
    k = _gaussian_kernel(sigma, x.device)
    r = (len(k) - 1) // 2
    x = x.index_select(2, _symmetric_index(h, r, x.device))
    x = F.conv2d(x, k.view(1, 1, -1, 1).repeat(c, 1, 1, 1), groups=c)
    x = x.index_select(3, _symmetric_index(w, r, x.device))
    return F.conv2d(x, k.view(1, 1, 1, -1).repeat(c, 1, 1, 1), groups=c)


def _contrast(x: torch.Tensor, factor: float) -> torch.Tensor:
    import torch

    if x.shape[1] == 3:
        luma = torch.as_tensor(LUMA, dtype=torch.float64, device=x.device)
        mean = (x.double().mean(dim=(2, 3)) @ luma).view(-1, 1, 1, 1)
    else:
        mean = x.double().mean(dim=(1, 2, 3)).view(-1, 1, 1, 1)
    return (mean + factor * (x.double() - mean)).float()


def _fov_crop(x: torch.Tensor, keep: float) -> torch.Tensor:
    import torch.nn.functional as F

    h, w = x.shape[2:]
    top, left, ch, cw = crop_box(h, w, keep)
    if (ch, cw) == (h, w):
        return x
    crop = x[:, :, top : top + ch, left : left + cw]
    return F.interpolate(crop, size=(h, w), mode="bilinear", align_corners=False)


def apply_torch(
    images: torch.Tensor,
    name: str,
    severity: int,
    image_ids: Sequence[str] | None = None,
    *,
    table: TableLike = None,
) -> torch.Tensor:
    """Perturb a uint8 tensor batch, on its own device where possible.

    Parameters
    ----------
    images : torch.Tensor of uint8, shape (N, H, W) or (N, H, W, 3)
        The numpy layout (channels last); any device. Not modified.
    name, severity, table
        As in :func:`crsbench.perturb.apply`.
    image_ids : sequence of str, optional
        Needed for the perturbations that fall back to numpy (JPEG, noise).

    Returns
    -------
    torch.Tensor of uint8
        Same shape and device. Native perturbations (``NATIVE``) agree with the numpy
        reference within one grey level; the others are byte-identical to it.
    """
    import torch

    if not isinstance(images, torch.Tensor):
        raise DataError(f"images must be a torch.Tensor. Got {type(images).__name__} instead.")
    if images.dtype != torch.uint8 or images.ndim not in (3, 4):
        raise DataError(
            "images must be a uint8 tensor of shape (N, H, W) or (N, H, W, 3). "
            f"Got {images.dtype} {tuple(images.shape)} instead."
        )
    if images.ndim == 4 and images.shape[3] != 3:
        raise DataError(f"images must have 3 channels last. Got {tuple(images.shape)} instead.")
    _spec, level, params = _resolve(name, severity, table)
    if level == 0:
        return images.clone()
    if name not in NATIVE:
        if image_ids is None:
            raise DataError(f"apply_torch: {name!r} needs image_ids (one per image). Got None.")
        out = apply_batch(images.cpu().numpy(), name, level, image_ids, table=table)
        return torch.from_numpy(np.ascontiguousarray(out)).to(images.device)
    rgb = images.ndim == 4
    x = images.permute(0, 3, 1, 2) if rgb else images[:, None]
    x = x.float()
    fn = {"gaussian_blur": _blur, "contrast": _contrast, "fov_crop": _fov_crop}[name]
    y = torch.round(fn(x, params)).clamp_(0, 255).to(torch.uint8)
    return (y.permute(0, 2, 3, 1) if rgb else y[:, 0]).contiguous()
