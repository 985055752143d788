"""Turn density maps into 8-bit radiographs with a hospital's look (tone curve, noise, marker).

CheXpert and MIMIC-CXR share the anatomy and finding generators; the second hospital differs
in exposure (gamma), windowing, noise level, sharpness and a burned-in text marker.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw

from crsbench.datasets.synthetic import draw
from crsbench.datasets.synthetic.cxr_frontal import frontal_density
from crsbench.datasets.synthetic.cxr_lateral import lateral_density


@dataclass(frozen=True)
class Scanner:
    """Look of one hospital's images."""

    gamma: float
    window: tuple[float, float]
    noise: float
    blur: float
    marker: str | None


CHEXPERT_SCANNER = Scanner(gamma=1.0, window=(0.02, 0.98), noise=0.012, blur=0.6, marker=None)
MIMIC_SCANNER = Scanner(gamma=0.7, window=(0.10, 0.88), noise=0.035, blur=0.3, marker="PORTABLE")


def render_cxr(
    findings: dict[str, bool],
    rng: np.random.Generator,
    side: int,
    view: str,
    scanner: Scanner,
) -> np.ndarray:
    """Render one grey radiograph (float32 in [0, 1], ``side × side``).

    Parameters
    ----------
    findings : dict[str, bool]
        True findings of the study (see :func:`cxr_labels.draw_findings`).
    rng : numpy.random.Generator
        Per-image stream.
    side : int
        Image side in pixels.
    view : str
        ``"PA"``, ``"AP"`` or ``"LATERAL"``.
    scanner : Scanner
        The hospital's look.
    """
    if view == "LATERAL":
        dens = lateral_density(findings, rng, side)
    else:
        dens = frontal_density(findings, rng, side, ap=(view == "AP"))
    k = rng.uniform(2.2, 3.0)
    img = 1.0 - np.exp(-k * np.clip(dens + rng.normal(0.05, 0.03), 0.0, None))
    lo, hi = np.quantile(img, [0.01, 0.995])
    img = (img - lo) / max(hi - lo, 1e-3)
    w0, w1 = scanner.window
    img = w0 + (w1 - w0) * np.clip(img, 0.0, 1.0)
    img = np.clip(img, 0.0, 1.0) ** (scanner.gamma * np.exp(rng.normal(0, 0.08)))
    img = draw.blur(img.astype(np.float32), scanner.blur * side / 128.0)
    img = img + rng.normal(0, scanner.noise, img.shape).astype(np.float32)
    img = np.clip(img, 0.0, 1.0)
    if scanner.marker:
        img = _marker(img, scanner.marker if view == "AP" else view if view != "PA" else "R", rng)
    return img


def _marker(img: np.ndarray, text: str, rng: np.random.Generator) -> np.ndarray:
    h, w = img.shape
    canvas = Image.new("L", (w, h), 0)
    pen = ImageDraw.Draw(canvas)
    corner = int(rng.integers(0, 2))
    width = int(np.ceil(pen.textlength(text)))
    x0 = int(0.04 * w) if corner == 0 else max(0, w - width - int(0.04 * w))
    pen.text((x0, int(0.04 * h)), text, fill=255)
    mask = np.asarray(canvas, dtype=np.float32) / 255.0
    return np.maximum(img, 0.95 * mask)
