"""Edges validated once: image geometry and pixel values, config numbers the store cannot hold,
and out-of-range options on every command, each refused with the file, key or option named."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.config import load_config
from crsbench.core.errors import ConfigError
from crsbench.features.decode import ImageBounds, ImageDecodeError, decode_image

BASE = "encoders: [pixel]\ndatasets:\n  isic2019: {root: /tmp}\n"


def _flat(text: str) -> str:
    return " ".join(text.split())


# -- images -----------------------------------------------------------------------------------------


def test_an_extreme_aspect_ratio_is_refused_before_decoding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "strip.png"
    Image.new("L", (4000, 8)).save(path)  # resized to short side 224: 224 x 112,000
    decoded: list[bool] = []
    real_load = Image.Image.load
    monkeypatch.setattr(Image.Image, "load", lambda im: decoded.append(True) or real_load(im))
    with pytest.raises(ImageDecodeError) as err:
        decode_image(path, 224)
    assert err.value.error_class == "bad_geometry"
    assert str(err.value) == (
        f"bad_geometry: {path} is 4000 x 8 px: its aspect ratio 500.0:1 is above the maximum "
        "20:1 (resized, it would be 500 times as long as wide)"
    )
    assert decoded == []  # refused from the header: no pixel was decoded


def test_image_bounds_are_configurable(tmp_path: Path) -> None:
    path = tmp_path / "wide.png"
    Image.new("L", (300, 100)).save(path)
    assert decode_image(path, 32).shape == (32, 32)
    narrow = ImageBounds.from_mapping({"max_aspect": 2.5}, "image_bounds")
    with pytest.raises(ImageDecodeError, match=r"wide.png is 300 x 100 px: its aspect ratio 3.0:1"):
        decode_image(path, 32, narrow)
    tall = ImageBounds.from_mapping({"min_side": 128, "max_aspect": 2.5}, "image_bounds")
    assert tall == ImageBounds(min_side=128, max_aspect=2.5)
    with pytest.raises(ImageDecodeError, match=r"shorter side is 100 px, below the minimum 128"):
        decode_image(path, 32, tall)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_a_float_image_with_non_finite_pixels_is_named(tmp_path: Path, value: float) -> None:
    pixels = np.linspace(0, 1, 64 * 64, dtype=np.float32).reshape(64, 64)
    pixels[3, 5] = value
    path = tmp_path / "float.tif"
    Image.fromarray(pixels, mode="F").save(path)
    with pytest.raises(ImageDecodeError) as err:
        decode_image(path, 32)
    assert err.value.error_class == "non_finite"
    assert f"{path}: 1 of 4096 pixel values are NaN or infinite" in str(err.value)


def test_a_finite_float_image_still_decodes(tmp_path: Path) -> None:
    path = tmp_path / "float.tif"
    Image.fromarray(np.linspace(0, 1, 64 * 64, dtype=np.float32).reshape(64, 64)).save(path)
    out = decode_image(path, 32)
    assert out.dtype == np.uint8 and out.min() < 10 and out.max() > 245


# -- config numbers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ("seeds: [0, 2147483648]\n",
         "seeds: each seed must be at most 2147483647 (the store's 32-bit seed column). "
         "Got [0, 2147483648] instead."),
        ("regimes: {lora: {seeds: [9223372036854775807]}}\n",
         "regimes.lora.seeds: each seed must be at most 2147483647"),
        ("seeds: [99999999999999999999]\n",
         "seeds: must fit a 64-bit integer (what crsbench stores). Got [99999999999999999999]"),
        ("batch_size: 99999999999999999999999\n",
         "batch_size: must fit a 64-bit integer (what crsbench stores)."),
        ("split_seed: -1\n", "split_seed: Input should be greater than or equal to 0. Got -1"),
    ],
)  # fmt: skip
def test_numbers_the_store_cannot_hold_are_refused(
    tmp_path: Path, extra: str, expected: str
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(BASE + extra, encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert expected in _flat(str(err.value))


def test_the_largest_storable_seed_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(BASE + "seeds: [0, 2147483647]\n", encoding="utf-8")
    assert load_config(path).seeds == [0, 2147483647]


# -- options ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["score", "--store", "S", "--seed", "-1"], "Invalid value for '--seed'"),
        (["analyze", "--store", "S", "--seed", "2147483648"], "Invalid value for '--seed'"),
        (["report", "--store", "S", "--out", "R", "--seed", "-3"], "Invalid value for '--seed'"),
        (["synth", "--out", "D", "--seed", "-1"], "Invalid value for '--seed'"),
        (["export", "--store", "S", "--encoder", "pixel", "--out", "M", "--seed", "-1"],
         "Invalid value for '--seed'"),
        (["score", "--store", "S", "--replicates", "10000001"], "Invalid value for '--replicates'"),
        (["score", "--store", "S", "--replicates", "-1"], "--replicates must be >= 0. Got -1"),
        (["analyze", "--store", "S", "--replicates", "0"], "--replicates must be >= 1. Got 0"),
        (["score", "--store", "S", "--jobs", "-1"], "Invalid value for '--jobs'"),
        (["run", "C", "--jobs", "0"], "Invalid value for '--jobs'"),
        (["run", "C", "--dry-run-images", "-1"], "Invalid value for '--dry-run-images'"),
        (["datasets", "check", "isic2019", "--root", "D", "--workers", "0"],
         "Invalid value for '--workers'"),
    ],
)  # fmt: skip
def test_out_of_range_options_are_usage_errors(
    tmp_path: Path, args: list[str], expected: str
) -> None:
    names = {"S": tmp_path / "store", "R": tmp_path / "report", "D": tmp_path / "data",
             "M": tmp_path / "model", "C": tmp_path / "config.yaml"}  # fmt: skip
    result = CliRunner().invoke(app, [str(names.get(a, a)) for a in args])
    assert result.exit_code == 2, result.output
    assert expected in _flat(result.output) and "Traceback" not in result.output
    assert not any(p.exists() for p in names.values())  # refused before anything was written
