"""``datasets check`` and ``profile``'s image check refuse what a run's decoder refuses: image
geometry outside the bounds (from the header) and, with ``--decode``, non-finite float pixels;
fuzz finds (header-only PNGs of 70,000 x 1 px or 400 x 8 px) passed the check before."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.config import parse_config
from crsbench.core.errors import ConfigError
from crsbench.datasets.check import check
from crsbench.datasets.files import probe_image


def _header_only_png(path: Path, width: int, height: int) -> Path:
    def chunk(tag: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(tag + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + tag + body + struct.pack(">I", crc)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    body = chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0")) + chunk(b"IEND", b"")
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + body)
    return path


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        ((1, 30), "1 x 30 px: its aspect ratio 30.0:1 is above the maximum 20:1"),
        ((70_000, 1), "70000 x 1 px: its longer side is 70000 px, above the maximum 65536 px"),
        ((400, 8), "400 x 8 px: its aspect ratio 50.0:1 is above the maximum 20:1"),
    ],
)
def test_geometry_outside_the_bounds_is_named_by_the_probe(
    tmp_path: Path, size: tuple[int, int], expected: str
) -> None:
    path = _header_only_png(tmp_path / "odd.png", *size)
    kind, message = probe_image(str(path)) or ("", "")
    assert kind == "bad_geometry" and message.startswith(expected)


def test_datasets_check_names_the_bad_geometry_file(tmp_path: Path) -> None:
    for i in range(4):
        Image.new("L", (16, 16)).save(tmp_path / f"img{i}.png")
    _header_only_png(tmp_path / "img2.png", 400, 8)
    rows = ["path,label"] + [f"img{i}.png,{'ab'[i % 2]}" for i in range(4)]
    (tmp_path / "labels.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    report = check("folder", tmp_path)
    assert not report.ok and report.problem_counts == {"bad_geometry": 1}
    result = CliRunner().invoke(app, ["datasets", "check", "folder", "--root", str(tmp_path)])
    assert result.exit_code == 1
    assert f"  row 3: {tmp_path / 'img2.png'} (400 x 8 px: its aspect ratio 50.0:1" in result.output


def test_decode_names_non_finite_float_pixels(tmp_path: Path) -> None:
    pixels = np.zeros((8, 8), dtype=np.float32)
    pixels[1, 2] = np.nan
    path = tmp_path / "float.tif"
    Image.fromarray(pixels, mode="F").save(path)
    assert probe_image(str(path)) is None  # the header alone is fine
    assert probe_image(str(path), decode=True) == (
        "non_finite",
        "1 of 64 pixel values are NaN or infinite",
    )


def test_bad_bounds_options_and_retired_variables_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Image.new("L", (16, 16)).save(tmp_path / "img0.png")
    (tmp_path / "labels.csv").write_text("path,label\nimg0.png,a\n", encoding="utf-8")
    base = ["datasets", "check", "folder", "--root", str(tmp_path)]
    result = CliRunner().invoke(app, [*base, "--max-aspect", "0.5"])
    assert result.exit_code == 2, result.output
    assert "--max-aspect must be in [1, 1e+06]. Got 0.5 instead." in " ".join(result.output.split())
    result = CliRunner().invoke(app, [*base, "--min-side", "64", "--max-side", "32"])
    assert result.exit_code == 2 and "--min-side must be at most --max-side (32)" in result.output
    monkeypatch.setenv("CRSBENCH_IMAGE_MAX_ASPECT", "wide")
    result = CliRunner().invoke(app, base)
    said = " ".join(result.output.split())
    assert result.exit_code == 2 and "CRSBENCH_IMAGE_MAX_ASPECT is no longer read" in said
    assert "image_bounds.max_aspect" in said and "--max-aspect" in said
    assert result.exit_code == 2
    with pytest.raises(ConfigError, match="CRSBENCH_IMAGE_MAX_ASPECT is no longer read"):
        parse_config({"encoders": ["pixel"], "datasets": {"isic2019": {"root": str(tmp_path)}}},
                     base_dir=tmp_path)  # fmt: skip
