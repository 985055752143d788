"""Vectorised drawing primitives shared by the synthetic generators.

Coordinates are "normalised": ``y`` runs from -1 (top) to 1 (bottom) and ``x`` uses the same
unit (half the image height), so a landscape image spans ``|x| <= w / h``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageDraw
from scipy import ndimage


def grid(h: int, w: int) -> tuple[np.ndarray, np.ndarray]:
    """Normalised pixel-centre coordinates ``(X, Y)``, each of shape ``(h, w)``, float32."""
    half = h / 2.0
    ys = ((np.arange(h, dtype=np.float32) + 0.5) - half) / half
    xs = ((np.arange(w, dtype=np.float32) + 0.5) - w / 2.0) / half
    x, y = np.meshgrid(xs, ys)
    return x, y


def to_pixels(x: np.ndarray | float, y: np.ndarray | float, h: int, w: int):
    """Normalised coordinates to pixel coordinates ``(px, py)`` (PIL convention)."""
    half = h / 2.0
    return np.asarray(x) * half + w / 2.0 - 0.5, np.asarray(y) * half + half - 0.5


def affine(
    x: np.ndarray, y: np.ndarray, angle: float, dx: float, dy: float, scale: float
) -> tuple[np.ndarray, np.ndarray]:
    """Coordinates of the scene seen through a rotated, shifted and scaled camera."""
    c, s = np.cos(angle), np.sin(angle)
    xr = (c * x - s * y) / scale - dx
    yr = (s * x + c * y) / scale - dy
    return xr.astype(np.float32), yr.astype(np.float32)


def sigmoid(z: np.ndarray) -> np.ndarray:
    """Numerically safe logistic function, float32."""
    return (0.5 * (1.0 + np.tanh(0.5 * np.clip(z, -40, 40)))).astype(np.float32)


def soft_ellipse(
    x: np.ndarray,
    y: np.ndarray,
    cx: float,
    cy: float,
    rx: float,
    ry: float,
    angle: float = 0.0,
    edge: float = 0.02,
) -> np.ndarray:
    """Soft-edged ellipse mask in [0, 1]; ``edge`` is the border width in normalised units."""
    c, s = np.cos(angle), np.sin(angle)
    u = (c * (x - cx) + s * (y - cy)) / rx
    v = (-s * (x - cx) + c * (y - cy)) / ry
    r = np.sqrt(u * u + v * v)
    return sigmoid((1.0 - r) * min(rx, ry) / max(edge, 1e-4))


def gaussian(x: np.ndarray, y: np.ndarray, cx: float, cy: float, sx: float, sy: float):
    """Unnormalised 2-D Gaussian bump with peak 1."""
    return np.exp(-0.5 * (((x - cx) / sx) ** 2 + ((y - cy) / sy) ** 2)).astype(np.float32)


def smooth_noise(rng: np.random.Generator, h: int, w: int, cells: float) -> np.ndarray:
    """Band-limited noise with about ``cells`` features across the height; zero mean, unit std."""
    ch = max(2, int(round(cells)))
    cw = max(2, int(round(cells * w / h)))
    low = rng.standard_normal((ch, cw)).astype(np.float32)
    up = np.asarray(Image.fromarray(low).resize((w, h), Image.Resampling.BICUBIC))
    up = up.astype(np.float32)
    return (up - up.mean()) / (up.std() + 1e-6)


def add_blobs(
    canvas: np.ndarray,
    px: Sequence[float] | np.ndarray,
    py: Sequence[float] | np.ndarray,
    sigmas: Sequence[float] | np.ndarray,
    amps: Sequence[float] | np.ndarray,
) -> np.ndarray:
    """Add separable Gaussian blobs (pixel units) into ``canvas`` in place and return it."""
    h, w = canvas.shape[:2]
    for x, y, s, a in zip(px, py, sigmas, amps, strict=True):
        r = int(np.ceil(3.0 * s)) + 1
        x0, x1 = max(0, int(x) - r), min(w, int(x) + r + 1)
        y0, y1 = max(0, int(y) - r), min(h, int(y) + r + 1)
        if x0 >= x1 or y0 >= y1:
            continue
        gx = np.exp(-0.5 * ((np.arange(x0, x1) - x) / s) ** 2)
        gy = np.exp(-0.5 * ((np.arange(y0, y1) - y) / s) ** 2)
        patch = (a * np.outer(gy, gx)).astype(np.float32)
        if canvas.ndim == 3:
            patch = patch[:, :, None]
        canvas[y0:y1, x0:x1] += patch
    return canvas


def bezier(p0, p1, p2, n: int = 24) -> np.ndarray:
    """Points of a quadratic Bézier curve, shape ``(n, 2)``."""
    t = np.linspace(0.0, 1.0, n)[:, None]
    p0, p1, p2 = (np.asarray(p, dtype=np.float64) for p in (p0, p1, p2))
    return (1 - t) ** 2 * p0 + 2 * (1 - t) * t * p1 + t**2 * p2


def polylines(
    h: int,
    w: int,
    lines: Sequence[np.ndarray],
    widths: Sequence[float] | np.ndarray,
    levels: Sequence[float] | np.ndarray | None = None,
    blur: float = 0.5,
) -> np.ndarray:
    """Rasterise polylines given in pixel coordinates into a float mask in [0, 1].

    A width below one pixel is drawn one pixel wide at a proportionally lower level.
    """
    img = Image.new("L", (w, h), 0)
    draw = ImageDraw.Draw(img)
    levels = levels if levels is not None else [1.0] * len(lines)
    for pts, width, level in zip(lines, widths, levels, strict=True):
        if len(pts) < 2:
            continue
        px = max(1, int(round(width)))
        fill = int(round(255 * float(level) * min(1.0, width / px if width < 1 else 1.0)))
        coords = [(float(a), float(b)) for a, b in pts]
        draw.line(coords, fill=max(0, min(255, fill)), width=px, joint="curve")
    mask = np.asarray(img, dtype=np.float32) / 255.0
    if blur > 0:
        mask = ndimage.gaussian_filter(mask, blur)
    return mask


def mix(base: np.ndarray, colour: Sequence[float] | np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """Alpha-blend an RGB ``colour`` (or image) over ``base`` with per-pixel ``alpha``."""
    a = np.clip(alpha, 0.0, 1.0, dtype=np.float32)[:, :, None]
    colour = np.asarray(colour, dtype=np.float32)
    return (base + (colour - base) * a).astype(np.float32, copy=False)


def blur(image: np.ndarray, sigma: float) -> np.ndarray:
    """Gaussian blur over the spatial axes only."""
    if sigma <= 0:
        return image
    sig = (sigma, sigma, 0) if image.ndim == 3 else sigma
    return ndimage.gaussian_filter(image, sig)
