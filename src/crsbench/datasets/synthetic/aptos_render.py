"""Fundus-like RGB images whose lesions depend on the APTOS 2019 grade (0-4).

The lesion counts are Poisson with a grade-dependent rate times a per-image severity factor
(log-normal), so neighbouring grades overlap. Illumination, pigmentation, disc size and
position, laterality, focus and dust spots are nuisances.
"""

from __future__ import annotations

import numpy as np

from crsbench.datasets.synthetic import draw

# Poisson rates per grade 0..4.
_MICROANEURYSMS = (0.4, 4.0, 7.0, 9.0, 9.0)
_HAEMORRHAGES = (0.0, 0.6, 3.0, 8.0, 6.0)
_EXUDATES = (0.0, 0.3, 4.0, 6.0, 6.0)
_COTTON_WOOL = (0.0, 0.0, 0.5, 2.5, 2.0)
_NEOVASCULAR = (0.0, 0.0, 0.0, 0.15, 0.8)


def _vessel_tree(rng, disc, radius, side_sign, h, w):
    """Polylines (pixel units) and widths of four arcades with branches from the optic disc."""
    lines, widths = [], []
    unit = h / 128.0
    for vertical in (-1, 1):
        for temporal, reach in ((True, 1.1), (False, 0.55)):
            direction = -side_sign if temporal else side_sign
            start = np.array(disc)
            end = start + radius * np.array([direction * reach * 0.9, vertical * 0.55])
            mid = start + radius * np.array([direction * reach * 0.2, vertical * 0.6])
            mid = mid + rng.normal(0, 0.05 * radius, 2)
            pts = draw.bezier(start, mid, end, 28)
            lines.append(pts)
            widths.append(2.2 * unit if temporal else 1.5 * unit)
            for _ in range(int(rng.integers(2, 5))):
                k = int(rng.integers(6, 24))
                p0 = pts[k]
                ang = np.arctan2(*(pts[k + 1] - p0)[::-1]) + rng.choice([-1, 1]) * rng.uniform(
                    0.4, 1.1
                )
                length = rng.uniform(0.2, 0.45) * radius
                p2 = p0 + length * np.array([np.cos(ang), np.sin(ang)])
                p1 = 0.5 * (p0 + p2) + rng.normal(0, 0.05 * radius, 2)
                lines.append(draw.bezier(p0, p1, p2, 12))
                widths.append(1.0 * unit)
    px_lines = [np.stack(draw.to_pixels(p[:, 0], p[:, 1], h, w), axis=1) for p in lines]
    return px_lines, widths


def render_aptos(grade: int, rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """Render one fundus-like RGB image (float32 in [0, 1], shape ``(h, w, 3)``).

    Parameters
    ----------
    grade : int
        Diabetic-retinopathy grade, 0 (none) to 4 (proliferative).
    rng : numpy.random.Generator
        Per-image stream (lesions and nuisances).
    h, w : int
        Image size in pixels.
    """
    x, y = draw.grid(h, w)
    unit = h / 128.0
    radius = rng.uniform(0.86, 1.04)
    cx, cy = rng.normal(0, 0.04), rng.normal(0, 0.03)
    fundus = draw.soft_ellipse(x, y, cx, cy, radius, radius, edge=0.015)
    r = np.sqrt((x - cx) ** 2 + (y - cy) ** 2) / radius

    pigment = rng.uniform(0, 1)
    base = np.array([0.80, 0.36, 0.14]) * (1 - 0.45 * pigment) + rng.normal(0, 0.03, 3)
    base = base.astype(np.float32)
    light = (1.0 - 0.45 * r**2) * np.float32(rng.uniform(0.75, 1.1))
    light = light * (1 + 0.08 * draw.smooth_noise(rng, h, w, 3))
    img = base[None, None, :].astype(np.float32) * light[:, :, None]
    img = img * (1 + 0.04 * draw.smooth_noise(rng, h, w, h / 6))[:, :, None]

    side_sign = rng.choice([-1.0, 1.0])
    disc = (cx + side_sign * radius * rng.uniform(0.35, 0.5), cy + rng.normal(0, 0.05))
    disc_r = radius * rng.uniform(0.10, 0.14)
    macula = (cx - side_sign * radius * 0.08, cy + rng.normal(0, 0.03))
    img = img * (1 - 0.25 * draw.gaussian(x, y, *macula, 0.16 * radius, 0.16 * radius))[..., None]

    lines, widths = _vessel_tree(rng, disc, radius, side_sign, h, w)
    vessels = draw.polylines(h, w, lines, widths, blur=0.5 * unit)
    img = draw.mix(img, (0.45, 0.08, 0.05), 0.75 * vessels)
    disc_mask = draw.soft_ellipse(x, y, *disc, disc_r, disc_r * 1.1, edge=0.03)
    img = draw.mix(img, (0.98, 0.85, 0.55), 0.9 * disc_mask)
    cup = draw.gaussian(x, y, *disc, 0.45 * disc_r, 0.45 * disc_r)
    img = draw.mix(img, (1.0, 0.96, 0.85), 0.6 * cup)

    severity = float(np.exp(rng.normal(0, 0.5)))
    img = _lesions(img, rng, grade, severity, cx, cy, radius, disc, unit)
    n_dust = int(rng.poisson(0.8))
    if n_dust:
        dust = np.zeros((h, w), np.float32)
        qx, qy = _points(rng, n_dust, cx, cy, radius)
        px, py = draw.to_pixels(qx, qy, h, w)
        draw.add_blobs(dust, px, py, rng.uniform(1.5, 3.5, n_dust) * unit, [0.35] * n_dust)
        img = img * (1 - np.clip(dust, 0, 0.5))[..., None]

    img = img * fundus[:, :, None] + 0.02 * (1 - fundus[:, :, None])
    img = img + rng.normal(0, 0.01, img.shape).astype(np.float32)
    return np.clip(draw.blur(img, rng.uniform(0.2, 1.0) * unit), 0.0, 1.0)


def _points(rng, n, cx, cy, radius, spread=0.8):
    angle = rng.uniform(0, 2 * np.pi, n)
    rad = radius * spread * np.sqrt(rng.uniform(0, 1, n))
    return cx + rad * np.cos(angle), cy + rad * np.sin(angle)


def _lesions(img, rng, grade, severity, cx, cy, radius, disc, unit):
    h, w = img.shape[:2]
    red = np.zeros((h, w), np.float32)
    yellow = np.zeros((h, w), np.float32)
    white = np.zeros((h, w), np.float32)
    n_ma = int(rng.poisson(_MICROANEURYSMS[grade] * severity))
    px, py = draw.to_pixels(*_points(rng, n_ma, cx, cy, radius), h, w)
    draw.add_blobs(red, px, py, rng.uniform(0.5, 0.9, n_ma) * unit, [0.9] * n_ma)
    n_h = int(rng.poisson(_HAEMORRHAGES[grade] * severity))
    px, py = draw.to_pixels(*_points(rng, n_h, cx, cy, radius), h, w)
    draw.add_blobs(red, px, py, rng.uniform(1.2, 2.6, n_h) * unit, rng.uniform(0.6, 1.0, n_h))
    n_ex = int(rng.poisson(_EXUDATES[grade] * severity))
    if n_ex:
        centre = _points(rng, 1, cx, cy, radius, 0.5)
        ex_x = centre[0] + rng.normal(0, 0.12 * radius, 3 * n_ex)
        ex_y = centre[1] + rng.normal(0, 0.12 * radius, 3 * n_ex)
        px, py = draw.to_pixels(ex_x, ex_y, h, w)
        draw.add_blobs(yellow, px, py, rng.uniform(0.6, 1.3, 3 * n_ex) * unit, [0.8] * (3 * n_ex))
    n_cw = int(rng.poisson(_COTTON_WOOL[grade] * severity))
    px, py = draw.to_pixels(*_points(rng, n_cw, cx, cy, radius, 0.6), h, w)
    draw.add_blobs(white, px, py, rng.uniform(2.0, 3.5, n_cw) * unit, [0.5] * n_cw)
    for layer, colour in (
        (red, (0.35, 0.04, 0.03)),
        (yellow, (0.95, 0.85, 0.35)),
        (white, (0.92, 0.88, 0.80)),
    ):
        if layer.any():
            img = draw.mix(img, colour, layer)
    if rng.uniform() < _NEOVASCULAR[grade] * min(severity, 1.5):
        lines = []
        for _ in range(int(rng.integers(4, 9))):
            p0 = np.array(disc) + rng.normal(0, 0.08 * radius, 2)
            p2 = p0 + rng.normal(0, 0.12 * radius, 2)
            p1 = 0.5 * (p0 + p2) + rng.normal(0, 0.08 * radius, 2)
            pts = draw.bezier(p0, p1, p2, 10)
            lines.append(np.stack(draw.to_pixels(pts[:, 0], pts[:, 1], h, w), axis=1))
        neo = draw.polylines(h, w, lines, [0.8 * unit] * len(lines), blur=0.3)
        img = draw.mix(img, (0.55, 0.06, 0.06), 0.8 * neo)
    return img
