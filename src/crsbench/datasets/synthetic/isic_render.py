"""Dermoscopy-like RGB images whose lesion depends on the ISIC 2019 class.

Each class has mean lesion parameters (size, darkness, redness, border irregularity, colour
variegation, white centre, vessels, blue-white veil); a lesion draws its own parameters around
its class mean with a spread comparable to the gaps between classes, so classes overlap.
Skin tone, illumination, vignette, hair, position and scale are nuisances drawn per image.
"""

from __future__ import annotations

import numpy as np

from crsbench.datasets.synthetic import draw

CLASSES = ("MEL", "NV", "BCC", "AK", "BKL", "DF", "VASC", "SCC")

# size, dark, red, irregular, variegation, white, vessels, veil
_MEANS = {
    "MEL": (0.50, 0.70, 0.15, 0.15, 0.45, 0.10, 0.05, 0.35),
    "NV": (0.40, 0.50, 0.10, 0.06, 0.18, 0.00, 0.00, 0.03),
    "BCC": (0.36, 0.30, 0.45, 0.10, 0.28, 0.20, 0.55, 0.15),
    "AK": (0.34, 0.22, 0.50, 0.08, 0.15, 0.30, 0.10, 0.00),
    "BKL": (0.42, 0.45, 0.15, 0.10, 0.25, 0.12, 0.00, 0.02),
    "DF": (0.25, 0.40, 0.20, 0.04, 0.15, 0.45, 0.00, 0.00),
    "VASC": (0.28, 0.35, 0.85, 0.05, 0.15, 0.00, 0.05, 0.20),
    "SCC": (0.35, 0.22, 0.50, 0.12, 0.22, 0.45, 0.30, 0.00),
}
_SPREAD = np.array([0.08, 0.13, 0.13, 0.04, 0.10, 0.12, 0.15, 0.12], dtype=np.float32)
_LIGHT_SKIN = np.array([0.93, 0.78, 0.70], dtype=np.float32)
_DARK_SKIN = np.array([0.72, 0.52, 0.40], dtype=np.float32)
_LIGHT_BROWN = np.array([0.70, 0.48, 0.32], dtype=np.float32)
_DARK_BROWN = np.array([0.22, 0.13, 0.09], dtype=np.float32)
_RED = np.array([0.80, 0.25, 0.28], dtype=np.float32)
_PURPLE = np.array([0.45, 0.15, 0.30], dtype=np.float32)
_VEIL = np.array([0.45, 0.50, 0.62], dtype=np.float32)
_WHITE = np.array([0.92, 0.88, 0.84], dtype=np.float32)


def lesion_params(label: str, rng: np.random.Generator) -> dict[str, float]:
    """Draw one lesion's parameters around its class mean (overlapping between classes)."""
    values = np.asarray(_MEANS[label], dtype=np.float32) + _SPREAD * rng.standard_normal(8)
    lo = np.array([0.12, 0.05, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], dtype=np.float32)
    hi = np.array([0.75, 0.95, 1.0, 0.30, 0.8, 0.9, 1.0, 0.9], dtype=np.float32)
    v = np.clip(values, lo, hi)
    names = ("size", "dark", "red", "irregular", "variegation", "white", "vessels", "veil")
    out = {k: float(x) for k, x in zip(names, v, strict=True)}
    harmonics = rng.standard_normal(6) * out["irregular"] / np.arange(2, 8) * 1.6
    out.update({f"a{k}": float(a) for k, a in enumerate(harmonics)})
    out.update({f"p{k}": float(p) for k, p in enumerate(rng.uniform(0, 2 * np.pi, 6))})
    out["ellipticity"] = float(rng.uniform(0.0, 0.18))
    out["seed"] = int(rng.integers(2**31))
    return out


def _skin(rng: np.random.Generator, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    h, w = x.shape
    tone = rng.uniform(0.0, 1.0) ** 1.5
    base = _LIGHT_SKIN * (1 - tone) + _DARK_SKIN * tone
    base = base * rng.uniform(0.9, 1.06) + rng.normal(0, 0.02, 3).astype(np.float32)
    coarse = draw.smooth_noise(rng, h, w, 6)
    fine = draw.smooth_noise(rng, h, w, max(8, h / 5))
    shade = 1.0 + 0.035 * coarse + 0.02 * fine
    gx, gy = rng.normal(0, 0.06, 2)
    shade = shade * (1.0 + gx * x + gy * y)
    return (base[None, None, :] * shade[:, :, None]).astype(np.float32)


def _lesion_mask(p: dict, x: np.ndarray, y: np.ndarray, cx: float, cy: float, radius: float):
    theta = np.arctan2(y - cy, x - cx)
    dist = np.sqrt((x - cx) ** 2 + (y - cy) ** 2)
    shape = 1.0 + p["ellipticity"] * np.cos(2 * (theta - p["p0"]))
    for k in range(6):
        shape = shape + p[f"a{k}"] * np.cos((k + 2) * theta + p[f"p{k}"])
    r = radius * np.clip(shape, 0.4, 1.8)
    edge = radius * (0.05 + 0.12 * (1 - min(1.0, p["irregular"] * 5)))
    return draw.sigmoid((r - dist) / edge), dist / np.maximum(r, 1e-3)


def render_isic(label: str, p: dict, rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """Render one dermoscopy-like RGB image (float32 in [0, 1], shape ``(h, w, 3)``).

    Parameters
    ----------
    label : str
        ISIC class (one of :data:`CLASSES`).
    p : dict
        Lesion parameters from :func:`lesion_params` (shared by images of one lesion).
    rng : numpy.random.Generator
        Per-image stream for the nuisances.
    h, w : int
        Image size in pixels.
    """
    x, y = draw.grid(h, w)
    img = _skin(rng, x, y)
    lesion_rng = np.random.default_rng(p["seed"])
    cx, cy = rng.normal(0, 0.12), rng.normal(0, 0.10)
    radius = p["size"] * float(np.exp(rng.normal(0, 0.12)))
    mask, rel = _lesion_mask(p, x, y, cx, cy, radius)

    dark = p["dark"] * (1.0 + p["variegation"] * 0.9 * draw.smooth_noise(lesion_rng, h, w, 5))
    dark = np.clip(dark, 0.0, 1.0)[:, :, None]
    brown = _LIGHT_BROWN * (1 - dark) + _DARK_BROWN * dark
    redness = p["red"]
    red = _RED * (1 - p["dark"]) + _PURPLE * p["dark"]
    colour = brown * (1 - redness) + red * redness
    network = draw.smooth_noise(lesion_rng, h, w, max(10, h / 4))
    colour = colour * (1.0 - 0.18 * p["dark"] * (network > 0.6)[:, :, None])
    img = draw.mix(img, colour, mask * rng.uniform(0.85, 1.0))

    if p["veil"] > 0.05:
        veil = draw.sigmoid(4 * draw.smooth_noise(lesion_rng, h, w, 4) - 2) * mask
        img = draw.mix(img, _VEIL, veil * p["veil"])
    if p["white"] > 0.05:
        centre = draw.gaussian(x, y, cx, cy, 0.35 * radius, 0.35 * radius)
        img = draw.mix(img, _WHITE, centre * p["white"] * mask)
    n_vessels = int(rng.poisson(8 * p["vessels"]))
    if n_vessels:
        img = _vessels(img, lesion_rng, n_vessels, cx, cy, radius, mask)
    img = _hair(img, rng)
    vignette = rng.uniform() < 0.5
    if vignette:
        r_v = rng.uniform(1.15, 1.5)
        field = draw.soft_ellipse(x, y, rng.normal(0, 0.05), 0.0, r_v, r_v, edge=0.04)
        img = img * (0.06 + 0.94 * field[:, :, None])
    img = img + rng.normal(0, 0.012, img.shape).astype(np.float32)
    return np.clip(draw.blur(img, rng.uniform(0.2, 0.7)), 0.0, 1.0)


def _vessels(img, rng, n, cx, cy, radius, mask):
    h, w = img.shape[:2]
    lines = []
    for _ in range(n):
        a0 = rng.uniform(0, 2 * np.pi)
        start = (cx + 0.2 * radius * np.cos(a0), cy + 0.2 * radius * np.sin(a0))
        end = (cx + 0.9 * radius * np.cos(a0 + 0.6), cy + 0.9 * radius * np.sin(a0 + 0.6))
        mid = (
            0.5 * (start[0] + end[0]) + rng.normal(0, 0.1 * radius),
            0.5 * (start[1] + end[1]) + rng.normal(0, 0.1 * radius),
        )
        pts = draw.bezier(start, mid, end, 16)
        lines.append(np.stack(draw.to_pixels(pts[:, 0], pts[:, 1], h, w), axis=1))
    m = draw.polylines(h, w, lines, [max(1.0, h / 128)] * n, [0.8] * n, blur=0.5)
    return draw.mix(img, (0.65, 0.12, 0.15), m * mask)


def _hair(img: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    h, w = img.shape[:2]
    n = int(rng.poisson(2.0) if rng.uniform() < 0.7 else rng.poisson(12.0))
    if n == 0:
        return img
    lines = []
    for _ in range(n):
        p0 = rng.uniform([-0.2 * w, -0.2 * h], [1.2 * w, 1.2 * h])
        angle, length = rng.uniform(0, np.pi), rng.uniform(0.3, 1.0) * h
        p2 = p0 + length * np.array([np.cos(angle), np.sin(angle)])
        p1 = 0.5 * (p0 + p2) + rng.normal(0, 0.12 * h, 2)
        lines.append(draw.bezier(p0, p1, p2, 24))
    width = max(1.0, h / 160) * rng.uniform(0.8, 1.3)
    m = draw.polylines(h, w, lines, [width] * n, rng.uniform(0.6, 1.0, n), blur=0.4)
    colour = np.array([0.12, 0.09, 0.07], dtype=np.float32) * rng.uniform(0.6, 1.4)
    return draw.mix(img, colour, m)
