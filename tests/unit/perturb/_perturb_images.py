"""Natural-looking synthetic test images (chest X-ray, fundus, dermoscopy, 1/f texture)."""

from __future__ import annotations

import numpy as np
from scipy import ndimage


def _pink_noise(shape: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    spectrum = np.fft.fft2(rng.standard_normal(shape))
    fy = np.fft.fftfreq(shape[0])[:, None]
    fx = np.fft.fftfreq(shape[1])[None, :]
    field = np.real(np.fft.ifft2(spectrum / np.maximum(np.hypot(fy, fx), 1.0 / max(shape))))
    return (field - field.mean()) / field.std()


def chest_xray(size: int = 224, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size] / size
    img = 150 + 30 * _pink_noise((size, size), rng) * 0.3
    for cx in (0.3, 0.7):
        lung = ((xx - cx) / 0.17) ** 2 + ((yy - 0.5) / 0.33) ** 2 < 1
        img = np.where(lung, img - 90, img)
    img += 60 * np.exp(-(((xx - 0.5) / 0.04) ** 2))  # spine
    img += 25 * (np.sin(yy * 60) > 0.6) * (np.abs(xx - 0.5) > 0.05)  # ribs
    img = ndimage.gaussian_filter(img, 1.0)
    return np.clip(img, 0, 255).astype(np.uint8)


def fundus(size: int = 224, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size] / size
    r = np.hypot(xx - 0.5, yy - 0.5)
    base = np.stack([190 - 80 * r, 90 - 40 * r, 30 + 0 * r], axis=-1)
    base += 10 * _pink_noise((size, size), rng)[..., None]
    disc = np.hypot(xx - 0.65, yy - 0.5) < 0.07
    base[disc] = [250, 220, 150]
    vessels = np.abs(np.sin((yy - 0.5) * 14 + 3 * (xx - 0.65) ** 2 * 20)) < 0.08
    base[vessels & (r < 0.45)] *= 0.6
    base[r > 0.47] = 0
    return np.clip(ndimage.gaussian_filter(base, (0.8, 0.8, 0)), 0, 255).astype(np.uint8)


def dermoscopy(size: int = 224, seed: int = 2) -> np.ndarray:
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size] / size
    skin = np.stack([225 - 20 * yy, 180 - 15 * xx, 160 + 0 * xx], axis=-1)
    skin += 6 * _pink_noise((size, size), rng)[..., None]
    theta = np.arctan2(yy - 0.5, xx - 0.5)
    edge = 0.25 + 0.04 * np.sin(5 * theta)
    lesion = np.hypot(xx - 0.5, yy - 0.5) < edge
    skin[lesion] = skin[lesion] * 0.45 + 20 * _pink_noise((size, size), rng)[lesion][:, None]
    hair = np.abs(yy - 0.3 - 0.2 * xx) < 0.004
    skin[hair] = 40
    return np.clip(ndimage.gaussian_filter(skin, (0.7, 0.7, 0)), 0, 255).astype(np.uint8)


def texture(size: int = 224, seed: int = 3, rgb: bool = False) -> np.ndarray:
    rng = np.random.default_rng(seed)
    channels = 3 if rgb else 1
    img = np.stack([128 + 40 * _pink_noise((size, size), rng) for _ in range(channels)], -1)
    img = np.clip(img, 0, 255).astype(np.uint8)
    return img if rgb else img[..., 0]


def all_images() -> dict[str, np.ndarray]:
    return {
        "cxr": chest_xray(),
        "fundus": fundus(),
        "derm": dermoscopy(),
        "tex_gray": texture(),
        "tex_rgb": texture(rgb=True, seed=4),
    }
