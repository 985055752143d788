"""Decode policy: explicit per-mode conversion and classified failures."""

from __future__ import annotations

import os
import struct
import zlib

import numpy as np
import pytest
from PIL import Image, ImageFile

from crsbench.core.errors import DataError
from crsbench.features.decode import ImageDecodeError, decode_image


def _rgb(h=48, w=64, seed=0):
    return np.random.default_rng(seed).integers(0, 256, size=(h, w, 3), dtype=np.uint8)


def test_rgb_png_resized_short_side_and_center_cropped(tmp_path):
    arr = np.zeros((40, 80, 3), np.uint8)
    arr[:, 20:60] = 200  # the central 40 columns survive the centre crop
    Image.fromarray(arr).save(tmp_path / "a.png")
    out = decode_image(tmp_path / "a.png", 40)
    assert out.shape == (40, 40, 3) and out.dtype == np.uint8
    assert (out == 200).all()


def test_grayscale_stays_two_dimensional(tmp_path):
    Image.fromarray(_rgb()[..., 0]).save(tmp_path / "g.png")
    assert decode_image(tmp_path / "g.png", 32).shape == (32, 32)


def test_rgba_drops_alpha_and_palette_converts(tmp_path):
    rgba = np.dstack([_rgb(32, 32), np.zeros((32, 32), np.uint8)])
    Image.fromarray(rgba, "RGBA").save(tmp_path / "a.png")
    out = decode_image(tmp_path / "a.png", 32)
    np.testing.assert_array_equal(out, rgba[..., :3])
    pal = Image.fromarray(_rgb(32, 32)).convert("P", palette=Image.Palette.ADAPTIVE, colors=16)
    pal.save(tmp_path / "p.png")
    out = decode_image(tmp_path / "p.png", 32)
    np.testing.assert_array_equal(out, np.asarray(pal.convert("RGB")))


def test_cmyk_jpeg_converted_to_rgb(tmp_path):
    Image.new("CMYK", (32, 32), (0, 255, 255, 0)).save(tmp_path / "c.jpg", quality=95)
    out = decode_image(tmp_path / "c.jpg", 32)
    assert out.shape == (32, 32, 3)
    r, g, b = out[..., 0].mean(), out[..., 1].mean(), out[..., 2].mean()
    assert r > 200 and g < 60 and b < 60  # pure cyan-free/magenta+yellow ink = red


def test_16bit_png_rescaled_not_clipped(tmp_path):
    ramp = np.linspace(1000, 4000, 32 * 32).reshape(32, 32).astype(np.uint16)
    Image.fromarray(ramp).save(tmp_path / "x.png")
    assert Image.open(tmp_path / "x.png").mode.startswith("I")
    out = decode_image(tmp_path / "x.png", 32)
    assert out.min() == 0 and out.max() == 255
    assert (out == 255).mean() < 0.01  # Pillow's convert("L") would saturate ~100 %
    expected = (ramp - 1000.0) * 255 / 3000
    assert np.abs(out - expected).max() <= 0.5 + 1e-9  # rounding of a linear rescale


def test_exif_orientation_applied(tmp_path):
    arr = np.zeros((20, 40, 3), np.uint8)
    arr[:, :20] = 255  # left half white
    im = Image.fromarray(arr)
    exif = im.getexif()
    exif[0x0112] = 6  # rotate 90 CW on display
    im.save(tmp_path / "r.jpg", exif=exif, quality=95)
    raw = np.asarray(Image.open(tmp_path / "r.jpg"))
    assert raw.shape[:2] == (20, 40)
    out = decode_image(tmp_path / "r.jpg", 20)  # displayed 40 x 20 -> crop centre 20 x 20
    full = np.asarray(Image.fromarray(arr).rotate(-90, expand=True))
    assert full.shape[:2] == (40, 20)
    assert out.shape == (20, 20, 3)
    # after a CW rotation the white left half becomes the top half
    assert out[:5].mean() > 200 and out[-5:].mean() < 50


@pytest.mark.parametrize("fmt", ["jpg", "png"])
@pytest.mark.parametrize("frac", [0.5, 0.99, "last"])
def test_truncated_files_are_classified(tmp_path, fmt, frac):
    src = tmp_path / f"full.{fmt}"
    Image.fromarray(_rgb(64, 64)).save(src)
    data = src.read_bytes()
    n = len(data) - 1 if frac == "last" else int(len(data) * frac)
    bad = tmp_path / f"cut.{fmt}"
    bad.write_bytes(data[:n])
    with pytest.raises(ImageDecodeError) as err:
        decode_image(bad, 32)
    assert err.value.error_class in {"truncated", "decode_error"}


def test_distinct_error_classes(tmp_path):
    (tmp_path / "zero.jpg").write_bytes(b"")
    (tmp_path / "html.jpg").write_text("<html><body>403 Forbidden</body></html>")
    (tmp_path / "dir.jpg").mkdir()
    os.symlink(tmp_path / "nowhere.png", tmp_path / "dangling.png")
    got = {}
    for name in ("zero.jpg", "html.jpg", "dir.jpg", "dangling.png", "absent.png"):
        with pytest.raises(ImageDecodeError) as err:
            decode_image(tmp_path / name, 32)
        got[name] = err.value.error_class
    assert got == {
        "zero.jpg": "empty_file",
        "html.jpg": "not_an_image",
        "dir.jpg": "is_directory",
        "dangling.png": "missing",
        "absent.png": "missing",
    }


def _png_chunk(tag: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))


def test_decompression_bomb_header_refused_before_allocation(tmp_path):
    ihdr = struct.pack(">IIBBBBB", 100_000, 100_000, 8, 0, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr)
    png += _png_chunk(b"IDAT", zlib.compress(b"\x00" * 100)) + _png_chunk(b"IEND", b"")
    (tmp_path / "bomb.png").write_bytes(png)
    with pytest.raises(ImageDecodeError) as err:
        decode_image(tmp_path / "bomb.png", 32)
    assert err.value.error_class == "decompression_bomb"


def test_one_pixel_image_upscaled(tmp_path):
    Image.new("RGB", (1, 1), (10, 20, 30)).save(tmp_path / "one.png")
    out = decode_image(tmp_path / "one.png", 16)
    assert out.shape == (16, 16, 3) and (out == [10, 20, 30]).all()


def test_load_truncated_images_switched_on_is_refused(tmp_path, monkeypatch):
    Image.fromarray(_rgb()).save(tmp_path / "a.png")
    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", True)
    with pytest.raises(DataError, match="LOAD_TRUNCATED_IMAGES must be False"):
        decode_image(tmp_path / "a.png", 32)
