"""Perturbations: determinism, monotonicity, identity, shapes, codec, Rician bias, purity."""

from __future__ import annotations

import hashlib
import importlib.util
import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageEnhance
from scipy import stats

from crsbench.perturb import (
    EXTRA_CONDITIONS,
    PAPER_CONDITIONS,
    apply,
    apply_batch,
    load_severities,
)

_spec = importlib.util.spec_from_file_location(
    "_perturb_images", Path(__file__).with_name("_perturb_images.py")
)
_images = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_images)
IMAGES = _images.all_images()
ALL_CONDITIONS = PAPER_CONDITIONS + EXTRA_CONDITIONS
NAMES = tuple(dict.fromkeys(name for name, _ in ALL_CONDITIONS))
STOCHASTIC = ("rician", "poisson_gaussian", "sensor_noise")


def _mad(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a.astype(np.float64) - b.astype(np.float64)).mean())


@pytest.mark.parametrize("name", NAMES)
def test_severity_monotonic_on_natural_images(name):
    for key, image in IMAGES.items():
        d = [_mad(apply(image, name, s, f"{key}.png"), image) for s in (0, 1, 2, 3)]
        assert d[0] == 0.0
        assert d[0] < d[1] < d[2] < d[3], (key, d)


@pytest.mark.parametrize("name", NAMES)
def test_determinism_and_stream_dependence(name):
    image = IMAGES["derm"]
    a = apply(image, name, 2, "ISIC_0000001")
    b = apply(image, name, 2, "ISIC_0000001")
    assert a.tobytes() == b.tobytes()
    c = apply(image, name, 2, "ISIC_0000002")
    assert (a.tobytes() != c.tobytes()) == (name in STOCHASTIC)


def test_rician_stream_is_the_protocol_seed():
    """Independent re-implementation of docs/protocol.md section 5 seeding + Rician magnitude."""
    image, image_id, severity = IMAGES["cxr"], "patient1/study1/view1_frontal.jpg", 2
    key = f"{image_id}|rician|{severity}".encode()
    seed = int.from_bytes(hashlib.sha256(key).digest()[:8], "big")
    sigma = load_severities().table["rician"][severity] * 255.0
    noise = np.random.default_rng(seed).standard_normal((2, *image.shape)) * sigma
    expected = np.clip(np.rint(np.hypot(image + noise[0], noise[1])), 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(apply(image, "rician", severity, image_id), expected)


@pytest.mark.parametrize("shape", [(37, 53), (37, 53, 3), (1, 1), (8, 8, 3)])
@pytest.mark.parametrize("condition", ALL_CONDITIONS)
def test_shape_dtype_preserved_and_input_untouched(shape, condition):
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, shape, dtype=np.uint8)
    before = image.copy()
    image.setflags(write=False)
    out = apply(image, *condition, image_id="img")
    assert out.shape == shape and out.dtype == np.uint8
    assert out is not image and not np.shares_memory(out, image)
    np.testing.assert_array_equal(image, before)


def test_identity_at_severity_zero():
    for name in NAMES:
        image = IMAGES["fundus"]
        out = apply(image, name, 0, "x")
        np.testing.assert_array_equal(out, image)
        assert not np.shares_memory(out, image)


@pytest.mark.parametrize("key", ["cxr", "fundus"])
def test_jpeg_equals_pil_round_trip(key):
    image = IMAGES[key]
    mode = "RGB" if image.ndim == 3 else "L"
    buf = io.BytesIO()
    Image.fromarray(image, mode).save(buf, format="JPEG", quality=5, subsampling=2)
    expected = np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert(mode))
    np.testing.assert_array_equal(apply(image, "jpeg", 3, "x"), expected)


def test_jpeg_quality5_has_8x8_block_artefacts():
    yy, xx = np.mgrid[0:128, 0:128]
    smooth = (40 + 0.8 * xx + 0.6 * yy + 10 * np.sin(xx / 7.0)).astype(np.uint8)
    out = apply(smooth, "jpeg", 3, "x").astype(np.float64)
    step = np.abs(np.diff(out, axis=1)).mean(axis=0)  # step between column c and c+1
    at_boundary = step[7::8].mean()
    inside = np.delete(step, np.arange(7, len(step), 8)).mean()
    assert at_boundary > 1.5 * inside
    clean_step = np.abs(np.diff(smooth.astype(float), axis=1)).mean(axis=0)
    assert clean_step[7::8].mean() < 1.2 * np.delete(clean_step, np.arange(7, 127, 8)).mean()


def test_contrast_hand_worked_and_pil_agreement():
    image = np.array([[0, 100, 200]], dtype=np.uint8)  # mean 100
    table = {"contrast": {1: 0.5}}
    np.testing.assert_array_equal(apply(image, "contrast", 1, "x", table=table), [[50, 100, 150]])
    rgb = IMAGES["derm"]
    pil = np.asarray(ImageEnhance.Contrast(Image.fromarray(rgb)).enhance(0.5)).astype(int)
    ours = apply(rgb, "contrast", 2, "x").astype(int)
    assert np.abs(ours - pil).max() <= 2  # PIL rounds the mean to an integer


def test_blur_matches_independent_convolution():
    image = IMAGES["tex_gray"]
    sigma = load_severities().table["gaussian_blur"][2] * 224
    radius = int(4.0 * sigma + 0.5)
    t = np.arange(-radius, radius + 1)
    kernel = np.exp(-0.5 * (t / sigma) ** 2)
    kernel /= kernel.sum()
    padded = np.pad(image.astype(np.float64), radius, mode="symmetric")
    rows = np.apply_along_axis(lambda r: np.convolve(r, kernel, mode="valid"), 1, padded)
    both = np.apply_along_axis(lambda c: np.convolve(c, kernel, mode="valid"), 0, rows)
    expected = np.clip(np.rint(both), 0, 255)
    assert np.abs(apply(image, "gaussian_blur", 2, "x").astype(float) - expected).max() <= 1


def test_fov_crop_matches_torch_bilinear():
    torch = pytest.importorskip("torch")
    image = IMAGES["tex_rgb"]
    keep = load_severities().table["fov_crop"][2]
    ch = round(keep * 224)
    top = (224 - ch) // 2
    crop = torch.from_numpy(image[top : top + ch, top : top + ch].astype(np.float64))
    up = torch.nn.functional.interpolate(
        crop.permute(2, 0, 1)[None], size=(224, 224), mode="bilinear", align_corners=False
    )[0].permute(1, 2, 0)
    expected = np.clip(np.rint(up.numpy()), 0, 255)
    assert np.abs(apply(image, "fov_crop", 2, "x").astype(float) - expected).max() <= 1


def test_rician_biased_upward_in_dark_regions():
    sigma_frac = load_severities().table["rician"][2]
    sigma = sigma_frac * 255
    dark = np.full((200, 200), 5, dtype=np.uint8)
    bright = np.full((200, 200), 200, dtype=np.uint8)
    dark_out = apply(dark, "rician", 2, "dark").astype(float)
    bright_out = apply(bright, "rician", 2, "bright").astype(float)
    assert dark_out.mean() > 5 + 0.8 * sigma  # large upward bias near zero
    assert abs(bright_out.mean() - 200) < 0.1 * sigma  # almost unbiased when signal >> sigma
    for level, out in ((5, dark_out), (200, bright_out)):
        expected = stats.rice(b=level / sigma, scale=sigma).mean()
        assert abs(out.mean() - expected) < 0.5


def test_poisson_gaussian_variance_is_signal_dependent():
    photons, read = (
        load_severities().table["poisson_gaussian"][3][k] for k in ("photons", "read_sigma")
    )
    for level in (50, 200):
        flat = np.full((256, 256), level, dtype=np.uint8)
        out = apply(flat, "poisson_gaussian", 3, f"flat{level}").astype(float) / 255
        x = level / 255
        assert out.var() == pytest.approx(x / photons + read**2, rel=0.1)


def test_sensor_noise_is_per_channel_and_strongest_in_shadows():
    flat = np.full((128, 128, 3), 60, dtype=np.uint8)
    out = apply(flat, "sensor_noise", 2, "flat").astype(float) - 60
    corr = np.corrcoef(out.reshape(-1, 3).T)
    assert np.abs(corr[np.triu_indices(3, 1)]).max() < 0.05  # independent channels
    bright = np.full((128, 128, 3), 220, dtype=np.uint8)
    out_b = apply(bright, "sensor_noise", 2, "flat").astype(float) - 220
    assert out.std() > out_b.std()


@pytest.mark.parametrize("condition", ALL_CONDITIONS)
@pytest.mark.parametrize("rgb", [False, True])
def test_apply_batch_equals_apply(condition, rgb):
    key = "tex_rgb" if rgb else "tex_gray"
    images = np.stack(
        [IMAGES[key][:48, :40], IMAGES[key][100:148, 60:100], IMAGES[key][-48:, -40:]]
    )
    ids = ["a.png", "b.png", "c.png"]
    out = apply_batch(images, *condition, image_ids=ids)
    for k in range(3):
        np.testing.assert_array_equal(out[k], apply(images[k], *condition, image_id=ids[k]))
