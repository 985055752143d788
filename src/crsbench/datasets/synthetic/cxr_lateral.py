"""Lateral chest-radiograph density maps (anterior to the left, spine to the right)."""

from __future__ import annotations

import numpy as np

from crsbench.datasets.synthetic import draw


def lateral_density(f: dict[str, bool], rng: np.random.Generator, side: int) -> np.ndarray:
    """Density map (float32, ``side × side``) of a lateral radiograph with findings ``f``."""
    h = w = side
    unit = side / 128.0
    gx, gy = draw.grid(h, w)
    x, y = draw.affine(
        gx,
        gy,
        rng.normal(0, 0.05),
        rng.normal(0, 0.04),
        rng.normal(0, 0.04),
        rng.uniform(0.92, 1.06),
    )
    body = draw.soft_ellipse(x, y, 0.0, 0.2, rng.uniform(0.72, 0.85), 1.3, edge=0.04)
    dens = 0.5 * body
    dome = 0.5 + rng.normal(0, 0.04)
    lung = draw.soft_ellipse(x, y, 0.02, -0.1, 0.62, 0.62, edge=0.05)
    lung = lung * draw.sigmoid((dome + 0.1 * x - y) * 30)
    size = rng.normal(0.27, 0.03) + (rng.normal(0.08, 0.04) if f["Cardiomegaly"] else 0.0)
    heart = draw.soft_ellipse(x, y, -0.22, 0.3, size, 0.28, angle=-0.5, edge=0.04)
    air = lung * (1.0 - heart)
    dens = dens - 0.3 * air + 0.025 * air * draw.smooth_noise(rng, h, w, 16) + 0.04 * heart
    vertebrae = 0.7 + 0.3 * np.sign(np.cos(np.pi * (y + 0.03 * x) / 0.075))
    dens = dens + 0.12 * draw.sigmoid((0.09 - np.abs(x - 0.58)) * 60) * vertebrae * body
    dens = dens + 0.08 * draw.sigmoid((0.025 - np.abs(x + 0.7 - 0.05 * y)) * 120)
    arms = draw.soft_ellipse(x, y, 0.0, -0.75, 0.9, 0.14, angle=0.25, edge=0.04)
    dens = dens + 0.18 * arms

    if f["Pleural Effusion"]:
        level = dome - rng.uniform(0.08, 0.35) - 0.2 * np.clip(x - 0.2, 0, 1)
        dens = dens + 0.28 * lung * draw.sigmoid((y - level) * 30) * draw.sigmoid((x - 0.1) * 20)
    opacities = [k for k in ("Consolidation", "Pneumonia", "Lung Opacity", "Edema") if f[k]]
    for name in opacities:
        r = rng.uniform(0.1, 0.22)
        blob = draw.gaussian(x, y, rng.uniform(-0.3, 0.4), rng.uniform(-0.3, 0.4), r, r)
        dens = dens + (0.2 if name == "Consolidation" else 0.1) * blob * lung
    if f["Lung Lesion"]:
        r = rng.uniform(0.03, 0.07)
        nod = draw.soft_ellipse(x, y, rng.uniform(-0.3, 0.4), rng.uniform(-0.4, 0.3), r, r, 0, 0.01)
        dens = dens + 0.2 * nod
    if f["Support Devices"]:
        line = draw.bezier((-0.1, -1.1), (0.05, -0.4), (-0.05, 0.3), 16)
        px = [np.stack(draw.to_pixels(line[:, 0], line[:, 1], h, w), axis=1)]
        dens = dens + 0.35 * draw.polylines(h, w, px, [1.8 * unit], blur=0.5 * unit)
    return dens
