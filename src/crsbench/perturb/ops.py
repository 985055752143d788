"""The perturbations themselves: pure numpy / Pillow functions on uint8 images.

Every function takes a uint8 image (H×W or H×W×3), the parsed severity parameter and a
``numpy.random.Generator``, computes in float64, and returns a new uint8 image of the same
shape, rounded half-to-even and clipped to [0, 255]. Inputs are never written to.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from PIL import Image
from scipy import ndimage

from crsbench.core.errors import ConfigError
from crsbench.perturb.registry import register_perturbation

LUMA = np.array([0.299, 0.587, 0.114])  # ITU-R BT.601, as PIL's "L" conversion


def to_uint8(x: np.ndarray) -> np.ndarray:
    """Round half-to-even and clip a float image to uint8."""
    return np.clip(np.rint(x), 0, 255).astype(np.uint8)


def _number(name: str, key: str, value: Any, lo: float, hi: float, integer: bool = False) -> float:
    ok = not isinstance(value, bool) and isinstance(value, (int, float))
    if ok and integer and float(value) != int(value):
        ok = False
    if not ok or not math.isfinite(value) or not lo <= value <= hi:
        kind = "an integer" if integer else "a number"
        raise ConfigError(f"{name}.{key} must be {kind} in [{lo}, {hi}]. Got {value!r} instead.")
    return int(value) if integer else float(value)


def _scalar_parser(
    name: str, key: str, lo: float, hi: float, integer: bool = False
) -> Callable[[Any], float]:
    def parse(value: Any) -> float:
        return _number(name, key, value, lo, hi, integer)

    return parse


def _noise_parser(name: str) -> Callable[[Any], tuple[float, float]]:
    def parse(value: Any) -> tuple[float, float]:
        if not isinstance(value, Mapping) or set(value) != {"photons", "read_sigma"}:
            raise ConfigError(
                f"{name} values must be mappings with keys photons and "
                f"read_sigma. Got {value!r} instead."
            )
        photons = _number(name, "photons", value["photons"], 1e-3, 1e9)
        read = _number(name, "read_sigma", value["read_sigma"], 0.0, 1.0)
        return photons, read

    return parse


# ---------------------------------------------------------------- gaussian blur
def _blur_sigma(shape: tuple[int, ...], fraction: float, rgb: bool) -> tuple[float, ...]:
    h, w = shape[:2]
    s = fraction * min(h, w)
    return (s, s, 0.0) if rgb else (s, s)


@register_perturbation(
    "gaussian_blur",
    parse=_scalar_parser("gaussian_blur", "sigma_fraction", 0.0, 1.0),
    kind="paper",
    stochastic=False,
    description="Gaussian blur; sigma = fraction · min(H, W), half-sample symmetric borders.",
)
def gaussian_blur(image: np.ndarray, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """Gaussian blur with ``sigma = fraction · min(H, W)`` (scipy, ``mode="reflect"``)."""
    sigma = _blur_sigma(image.shape, fraction, image.ndim == 3)
    return to_uint8(ndimage.gaussian_filter(image.astype(np.float64), sigma=sigma, mode="reflect"))


# ---------------------------------------------------------------- JPEG
@register_perturbation(
    "jpeg",
    parse=_scalar_parser("jpeg", "quality", 1, 95, integer=True),
    kind="paper",
    stochastic=False,
    description="JPEG re-compression through Pillow's libjpeg at a fixed quality.",
)
def jpeg(image: np.ndarray, quality: int, rng: np.random.Generator) -> np.ndarray:
    """Encode with Pillow's JPEG codec at ``quality`` (baseline, 4:2:0) and decode again."""
    mode = "RGB" if image.ndim == 3 else "L"
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(image), mode=mode).save(
        buf, format="JPEG", quality=int(quality), subsampling=2, optimize=False
    )
    buf.seek(0)
    with Image.open(buf) as decoded:
        return np.asarray(decoded.convert(mode), dtype=np.uint8).copy()


# ---------------------------------------------------------------- contrast
@register_perturbation(
    "contrast",
    parse=_scalar_parser("contrast", "factor", 0.0, 1.0),
    kind="paper",
    stochastic=False,
    description="Contrast reduction toward the mean luminance: m + factor · (x − m).",
)
def contrast(image: np.ndarray, factor: float, rng: np.random.Generator) -> np.ndarray:
    """``m + factor · (x − m)`` with ``m`` the image's mean luminance (BT.601 for RGB)."""
    x = image.astype(np.float64)
    mean = float((x.reshape(-1, 3).mean(axis=0) @ LUMA) if image.ndim == 3 else x.mean())
    return to_uint8(mean + factor * (x - mean))


# ---------------------------------------------------------------- Rician noise
@register_perturbation(
    "rician",
    parse=_scalar_parser("rician", "sigma", 0.0, 1.0),
    kind="paper",
    stochastic=True,
    description="Rician noise: |(x + n1, n2)|, n1, n2 ~ N(0, (sigma · 255)²) per pixel/channel.",
)
def rician(image: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """Magnitude of ``(x + n1, n2)`` with independent ``N(0, (sigma·255)²)`` components.

    The stream draws ``n1`` then ``n2`` in one ``standard_normal((2, *shape))`` call.
    """
    noise = rng.standard_normal((2, *image.shape)) * (sigma * 255.0)
    return to_uint8(np.hypot(image.astype(np.float64) + noise[0], noise[1]))


# ---------------------------------------------------------------- field-of-view crop
def crop_box(height: int, width: int, keep: float) -> tuple[int, int, int, int]:
    """``(top, left, crop_height, crop_width)`` of the central ``keep`` fraction of each side."""
    ch = min(height, max(1, int(round(keep * height))))
    cw = min(width, max(1, int(round(keep * width))))
    return (height - ch) // 2, (width - cw) // 2, ch, cw


@register_perturbation(
    "fov_crop",
    parse=_scalar_parser("fov_crop", "keep", 1e-3, 1.0),
    kind="paper",
    stochastic=False,
    description="Field-of-view crop: keep the central fraction of each side, resize back.",
)
def fov_crop(image: np.ndarray, keep: float, rng: np.random.Generator) -> np.ndarray:
    """Crop the central ``keep`` fraction of each side, resize back with Pillow bilinear."""
    h, w = image.shape[:2]
    top, left, ch, cw = crop_box(h, w, keep)
    if (ch, cw) == (h, w):
        return image.copy()
    crop = np.ascontiguousarray(image[top : top + ch, left : left + cw])
    mode = "RGB" if image.ndim == 3 else "L"
    resized = Image.fromarray(crop, mode=mode).resize((w, h), resample=Image.Resampling.BILINEAR)
    return np.asarray(resized, dtype=np.uint8).copy()


# ---------------------------------------------------------------- modality noise (extras)
@register_perturbation(
    "poisson_gaussian",
    parse=_noise_parser("poisson_gaussian"),
    kind="extra",
    modalities=("chest_xray",),
    stochastic=True,
    description="Radiograph quantum noise: Poisson(x · photons) / photons + N(0, read²).",
)
def poisson_gaussian(
    image: np.ndarray, params: tuple[float, float], rng: np.random.Generator
) -> np.ndarray:
    """Poisson–Gaussian noise (Foi et al. 2008): variance ``x / photons + read_sigma²``.

    ``x`` is the intensity in [0, 1]; the stream draws the Poisson counts, then the Gaussian.
    """
    photons, read = params
    x = image.astype(np.float64) / 255.0
    y = rng.poisson(x * photons) / photons + rng.standard_normal(image.shape) * read
    return to_uint8(y * 255.0)


def srgb_to_linear(c: np.ndarray) -> np.ndarray:
    """sRGB transfer function inverse (IEC 61966-2-1), values in [0, 1]."""
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def linear_to_srgb(lin: np.ndarray) -> np.ndarray:
    """sRGB transfer function (IEC 61966-2-1), values in [0, 1]."""
    lin = np.clip(lin, 0.0, 1.0)
    return np.where(lin <= 0.0031308, lin * 12.92, 1.055 * lin ** (1 / 2.4) - 0.055)


_SRGB_TO_LINEAR_LUT = srgb_to_linear(np.arange(256) / 255.0)


@register_perturbation(
    "sensor_noise",
    parse=_noise_parser("sensor_noise"),
    kind="extra",
    modalities=("dermoscopy", "fundus"),
    stochastic=True,
    description="Camera sensor noise: per-channel shot + read noise in linear light (sRGB).",
)
def sensor_noise(
    image: np.ndarray, params: tuple[float, float], rng: np.random.Generator
) -> np.ndarray:
    """Shot + read noise per channel in linear light, re-encoded with the sRGB curve.

    Independent noise per channel gives the chroma (colour) noise of a real sensor; the sRGB
    curve makes it strongest in the shadows, as in photographs.
    """
    photons, read = params
    lin = _SRGB_TO_LINEAR_LUT[image]
    noisy = rng.poisson(lin * photons) / photons + rng.standard_normal(image.shape) * read
    return to_uint8(linear_to_srgb(noisy) * 255.0)
