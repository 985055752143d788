"""Pixel steps that some authors apply before the usual resize/normalise.

Each step reproduces one upstream operation exactly (same arithmetic, same rounding), so a
card can ask for it and the tests can pin it against the authors' own code:

- :func:`minmax_uint8`: hi-ml's ``remap_to_uint8`` (BioViL's loader): per image, subtract the
  minimum, divide by the new maximum, times 255, truncate to 8 bits.
- :func:`luma`: Pillow's ``Image.convert("L")`` of an RGB image (ITU-R 601-2 luma in fixed
  point), as BioViL's loader does after the stretch.
- :func:`tf_bilinear`: ``tf.image.resize(method="bilinear", antialias=False)`` (half-pixel
  centres, TensorFlow's lerp order), the resize of MedSigLIP's model-card evaluation recipe.
- :func:`grey_mask`: which images of a batch are grey (one channel, or three equal ones).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


def minmax_uint8(x: torch.Tensor) -> torch.Tensor:
    """Per-image min–max stretch to 0..255, truncated, as hi-ml ``remap_to_uint8``.

    Parameters
    ----------
    x : torch.Tensor
        Integer ``N×C×H×W`` (8- or 16-bit values); all channels of an image share one range.

    Returns
    -------
    torch.Tensor
        ``uint8`` of the same shape. A constant image gives zeros (hi-ml divides by zero).
    """
    import torch

    y = x.to(torch.float64)
    n = y.shape[0]
    y = y - y.reshape(n, -1).amin(dim=1).view(n, 1, 1, 1)
    top = y.reshape(n, -1).amax(dim=1).view(n, 1, 1, 1)
    y = torch.where(top > 0, y / torch.where(top > 0, top, 1.0), 0.0)
    return (y * 255).to(torch.uint8)


def luma(x: torch.Tensor) -> torch.Tensor:
    """RGB ``uint8`` ``N×3×H×W`` → ``N×1×H×W`` grey, bit-exact with Pillow's ``convert("L")``.

    Pillow computes ``(R·19595 + G·38470 + B·7471 + 0x8000) >> 16`` (libImaging/Convert.c).
    A one-channel input is returned as it is.
    """
    import torch

    if x.shape[1] == 1:
        return x
    v = x.to(torch.int64)
    grey = (v[:, 0] * 19595 + v[:, 1] * 38470 + v[:, 2] * 7471 + 0x8000) >> 16
    return grey.to(torch.uint8).unsqueeze(1)


def _tf_weights(n_in: int, n_out: int, device: torch.device) -> tuple[torch.Tensor, ...]:
    """Lower index, upper index and lerp of TF's half-pixel scaler, in float32."""
    import torch

    scale = torch.tensor(n_in, dtype=torch.float32) / torch.tensor(n_out, dtype=torch.float32)
    pos = (torch.arange(n_out, dtype=torch.float32) + 0.5) * scale - 0.5
    low = torch.floor(pos)
    lower = low.clamp(min=0).long()
    upper = torch.ceil(pos).long().clamp(max=n_in - 1)
    return lower.to(device), upper.to(device), (pos - low).to(device)


def tf_bilinear(x: torch.Tensor, h: int, w: int) -> torch.Tensor:
    """``tf.image.resize(x, (h, w), "bilinear", antialias=False)`` on float ``N×C×H×W``.

    TensorFlow (``resize_bilinear_op.cc``, ``compute_lerp``) interpolates as
    ``top = tl + (tr - tl)·xl``, ``bottom = bl + (br - bl)·xl``, ``top + (bottom - top)·yl``
    in float32; the same order is used here so that truncating afterwards agrees.
    """
    y0, y1, yl = _tf_weights(x.shape[-2], h, x.device)
    x0, x1, xl = _tf_weights(x.shape[-1], w, x.device)
    top_rows, bottom_rows = x[:, :, y0, :], x[:, :, y1, :]
    tl, tr = top_rows[..., x0], top_rows[..., x1]
    bl, br = bottom_rows[..., x0], bottom_rows[..., x1]
    top = tl + (tr - tl) * xl
    bottom = bl + (br - bl) * xl
    return top + (bottom - top) * yl.view(-1, 1)


def grey_mask(x: torch.Tensor) -> torch.Tensor:
    """Boolean ``N``: image has one channel, or three identical channels.

    The feature engine replicates grey files to three channels before an encoder sees them,
    so three equal channels stand for a grey ('L') file.
    """
    import torch

    if x.shape[1] == 1:
        return torch.ones(x.shape[0], dtype=torch.bool, device=x.device)
    same = (x[:, 0] == x[:, 1]) & (x[:, 1] == x[:, 2])
    return same.reshape(x.shape[0], -1).all(dim=1)
