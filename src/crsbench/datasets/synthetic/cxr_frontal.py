"""Frontal (PA/AP) chest-radiograph attenuation maps whose structures follow the findings.

The map is "density" (bright = dense): body soft tissue, air-filled lungs with vascular
markings, heart and mediastinum, spine, ribs and clavicles, then one structure per finding.
Each finding's size and density vary per image, and some are small, so labels overlap.
"""

from __future__ import annotations

import numpy as np

from crsbench.datasets.synthetic import draw


def _lung(x, y, xc, side, dome, apex=-0.72, half=0.27):
    """Soft mask of one lung and the normalised distance from its lateral edge."""
    t = np.clip((y - apex) / 0.45, 0.0, 1.0)
    hw = half * np.sqrt(t) + 1e-3
    rel = (x - xc) / hw
    base = dome + 0.14 * np.clip(rel * side, -1, 1) ** 2 - 0.05 * (rel * side < 0)
    inside = draw.sigmoid((1.0 - np.abs(rel)) * 12) * draw.sigmoid((base - y) * 40)
    inside = inside * draw.sigmoid((y - apex) * 40)
    lateral = np.clip(1.0 - rel * side, 0.0, 2.0) * hw  # distance from the lateral edge
    return inside.astype(np.float32), lateral.astype(np.float32), base


def _rib_lines(rng, h, w, side, k, fracture, to_px):
    x0, y0 = side * 0.07, -0.80 + 0.125 * k
    t = np.linspace(0.0, 1.0, 22)
    xs = x0 + side * 0.82 * t
    ys = y0 - 0.10 * np.sin(np.pi * t * 0.8) + 0.30 * t**2
    pts = np.stack(to_px(xs, ys), axis=1)
    if not fracture:
        return [pts]
    cut = int(rng.integers(7, 15))
    step = np.array([0.0, rng.uniform(1.0, 2.5) * h / 128.0 * rng.choice([-1, 1])])
    return [pts[: cut - 1], pts[cut:] + step]


def frontal_density(
    f: dict[str, bool], rng: np.random.Generator, side: int, ap: bool
) -> np.ndarray:
    """Density map (float32, ``side × side``) of a frontal radiograph with findings ``f``."""
    h = w = side
    unit = side / 128.0
    gx, gy = draw.grid(h, w)
    x, y = draw.affine(
        gx,
        gy,
        rng.normal(0, 0.04),
        rng.normal(0, 0.04),
        rng.normal(0, 0.04),
        rng.uniform(0.92, 1.06),
    )
    body_w = rng.uniform(0.82, 0.95)
    body = draw.soft_ellipse(x, y, 0.0, 0.25, body_w, 1.25, edge=0.04)
    body = np.maximum(body, draw.soft_ellipse(x, y, 0.0, -0.9, 0.24, 0.4, edge=0.03))
    dens = 0.45 * body
    inspiration = rng.normal(0.0, 0.04) - (0.05 if ap else 0.0)

    markings = draw.smooth_noise(rng, h, w, 22 * unit**0.5)
    lungs = np.zeros((h, w), np.float32)
    sides = {}
    for s in (-1.0, 1.0):
        dome = 0.52 + inspiration + (0.0 if s > 0 else -0.04)
        if f["Atelectasis"] and rng.uniform() < 0.5:
            dome -= rng.uniform(0.03, 0.09)
        mask, lateral, base = _lung(x, y, s * 0.38, s, dome)
        sides[s] = (mask, lateral, base)
        lungs = np.maximum(lungs, mask)

    ctr = rng.normal(0.40, 0.035) + (rng.normal(0.11, 0.05) if f["Cardiomegaly"] else 0.0)
    ctr *= 1.07 if ap else 1.0
    heart = draw.soft_ellipse(x, y, 0.06 + 0.1 * ctr, 0.36, ctr * body_w, 0.26, edge=0.03)
    widened = rng.normal(0.06, 0.025) if f["Enlarged Cardiomediastinum"] else 0.0
    med_w = rng.normal(0.13, 0.015) + widened
    medi = draw.sigmoid((med_w - np.abs(x - 0.01)) * 60) * draw.sigmoid((0.4 - y) * 30)
    medi = medi * draw.sigmoid((y + 0.95) * 30)
    solid = np.maximum(heart, medi)
    air = lungs * (1.0 - solid)
    ptx_clear = np.zeros((h, w), np.float32)
    if f["Pneumothorax"]:
        s = rng.choice([-1.0, 1.0])
        mask, lateral, _ = sides[s]
        gap = rng.uniform(0.03, 0.12) * (1.2 - 0.5 * np.clip((y + 0.7) / 1.2, 0, 1))
        ptx_clear = mask * draw.sigmoid((gap - lateral) * 80) * draw.sigmoid((0.2 - y) * 20)
        edge = mask * np.exp(-(((lateral - gap) / (0.012 * unit**-0.5)) ** 2))
        dens = dens + 0.06 * edge * draw.sigmoid((0.2 - y) * 20)
    dens = dens - 0.33 * air + 0.03 * air * markings * (1.0 - ptx_clear) - 0.05 * ptx_clear
    hila = sum(draw.gaussian(x, y, s * 0.16, -0.05, 0.08, 0.12) for s in (-1, 1))
    dens = dens + 0.06 * hila * (1.0 - solid) + 0.05 * solid
    dens = dens - 0.06 * draw.sigmoid((0.035 - np.abs(x)) * 150) * draw.sigmoid((-0.3 - y) * 40)
    spine = draw.sigmoid((0.065 - np.abs(x)) * 100) * (0.7 + 0.3 * np.cos(np.pi * y / 0.065) ** 2)
    dens = dens + 0.07 * spine * body

    dens = dens + _bones(f, rng, h, w, x, y)
    dens = dens + _findings(f, rng, h, w, x, y, sides, air, unit)
    if not ap:
        return dens
    scap = sum(draw.soft_ellipse(x, y, s * 0.62, -0.45, 0.16, 0.3, 0.3 * s, 0.03) for s in (-1, 1))
    return dens + 0.05 * scap


def _bones(f, rng, h, w, x, y):
    """Ribs, clavicles and humeral heads (drawn in image pixels after the pose transform)."""
    unit = h / 128.0

    def to_px(xs, ys):
        return draw.to_pixels(xs, ys, h, w)

    lines, widths = [], []
    broken = (rng.choice([-1.0, 1.0]), int(rng.integers(2, 7))) if f["Fracture"] else None
    for s in (-1.0, 1.0):
        for k in range(10):
            is_broken = broken is not None and broken == (s, k)
            for seg in _rib_lines(rng, h, w, s, k, is_broken, to_px):
                lines.append(seg)
                widths.append(3.2 * unit)
        clav = draw.bezier((s * 0.1, -0.74), (s * 0.35, -0.72), (s * 0.62, -0.84), 12)
        lines.append(np.stack(to_px(clav[:, 0], clav[:, 1]), axis=1))
        widths.append(4.0 * unit)
    ribs = draw.polylines(h, w, lines, widths, blur=0.8 * unit)
    out = 0.07 * ribs
    heads = sum(draw.soft_ellipse(x, y, s * 0.95, -0.78, 0.13, 0.13, edge=0.02) for s in (-1, 1))
    out = out + 0.12 * heads
    if broken is not None:
        callus = draw.gaussian(x, y, broken[0] * 0.55, -0.72 + 0.125 * broken[1] + 0.2, 0.04, 0.03)
        out = out + 0.05 * callus
    return out


def _blob(x, y, rng, sides, lower=False, size=(0.08, 0.2)):
    s = rng.choice([-1.0, 1.0])
    cy = rng.uniform(0.05, 0.4) if lower else rng.uniform(-0.5, 0.35)
    cx = s * rng.uniform(0.22, 0.5)
    r = rng.uniform(*size)
    return draw.gaussian(x, y, cx, cy, r, r * rng.uniform(0.7, 1.3)) * sides[s][0]


def _findings(f, rng, h, w, x, y, sides, air, unit):
    out = np.zeros((h, w), np.float32)
    if f["Pleural Effusion"]:
        which = [rng.choice([-1.0, 1.0])] if rng.uniform() < 0.6 else [-1.0, 1.0]
        for s in which:
            mask, lateral, base = sides[s]
            depth = rng.uniform(-0.04, 0.3)
            level = base - depth - 0.12 * np.clip(1.0 - lateral / 0.27, 0, 1) ** 2
            fluid = draw.sigmoid((y - level) * 30) * draw.sigmoid((np.abs(x) - 0.08) * 30)
            out = out + rng.uniform(0.08, 0.26) * fluid * draw.sigmoid(
                (0.98 - np.abs(x - s * 0.38) / 0.34) * 20
            )
    if f["Consolidation"]:
        for _ in range(int(rng.integers(1, 3))):
            out = out + rng.uniform(0.16, 0.26) * np.clip(1.4 * _blob(x, y, rng, sides, True), 0, 1)
    if f["Pneumonia"]:
        patch = _blob(x, y, rng, sides, True, (0.1, 0.22))
        texture = draw.sigmoid(3 * draw.smooth_noise(rng, h, w, 12))
        out = out + rng.uniform(0.1, 0.2) * patch * texture
    if f["Lung Opacity"]:
        out = out + rng.uniform(0.05, 0.12) * _blob(x, y, rng, sides, False, (0.1, 0.25))
    if f["Edema"]:
        haze = sum(draw.gaussian(x, y, s * 0.2, 0.0, 0.22, 0.3) for s in (-1, 1))
        out = out + rng.uniform(0.06, 0.14) * haze * air
    if f["Atelectasis"]:
        s = rng.choice([-1.0, 1.0])
        cy = rng.uniform(0.15, 0.4)
        plate = draw.bezier((s * 0.2, cy), (s * 0.35, cy - 0.04), (s * 0.55, cy + 0.03), 10)
        band = draw.polylines(
            h,
            w,
            [np.stack(draw.to_pixels(plate[:, 0], plate[:, 1], h, w), 1)],
            [2.5 * unit],
            blur=0.8 * unit,
        )
        out = out + 0.14 * band
    if f["Lung Lesion"]:
        for _ in range(int(rng.integers(1, 3))):
            s = rng.choice([-1.0, 1.0])
            r = rng.uniform(0.03, 0.07)
            nod = draw.soft_ellipse(
                x, y, s * rng.uniform(0.2, 0.5), rng.uniform(-0.45, 0.3), r, r, edge=0.008
            )
            out = out + 0.2 * nod
    if f["Pleural Other"]:
        s = rng.choice([-1.0, 1.0])
        mask, lateral, _ = sides[s]
        out = out + 0.12 * mask * draw.sigmoid((0.035 - lateral) * 150) * draw.sigmoid(
            (y - rng.uniform(-0.5, 0.1)) * 20
        )
    if f["Support Devices"]:
        out = out + _devices(rng, h, w, unit)
    return out


def _devices(rng, h, w, unit):
    """Endotracheal / nasogastric tubes, central line, pacemaker (bright, radio-opaque)."""
    lines, widths = [], []
    kinds = [k for k in ("ett", "ngt", "line", "pacer") if rng.uniform() < 0.5] or ["line"]
    if "ett" in kinds:
        lines.append(draw.bezier((0.0, -1.1), (0.01, -0.7), (0.0, -0.35), 8))
        widths.append(2.0 * unit)
    if "ngt" in kinds:
        lines.append(draw.bezier((0.02, -1.1), (-0.02, 0.2), (0.35, 0.85), 20))
        widths.append(1.5 * unit)
    if "line" in kinds:
        s = rng.choice([-1.0, 1.0])
        lines.append(draw.bezier((s * 0.5, -0.75), (s * 0.12, -0.7), (0.04, -0.15), 16))
        widths.append(1.5 * unit)
    if "pacer" in kinds:
        lines.append(draw.bezier((0.5, -0.62), (0.2, -0.5), (0.1, 0.35), 16))
        widths.append(1.2 * unit)
        lines.append(np.array([[0.42, -0.62], [0.6, -0.62]]))
        widths.append(7.0 * unit)
    px = [np.stack(draw.to_pixels(p[:, 0], p[:, 1], h, w), axis=1) for p in lines]
    return 0.35 * draw.polylines(h, w, px, widths, blur=0.5 * unit)
