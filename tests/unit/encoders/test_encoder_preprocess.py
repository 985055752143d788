"""Preprocessing against torchvision's transforms (independent implementation)."""

from __future__ import annotations

import pytest
import torch
import torchvision.transforms.v2.functional as TF

from crsbench.core.errors import EncoderError
from crsbench.encoders.preprocess import Preprocessing, preprocess

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def _img(c: int = 3, h: int = 90, w: int = 120) -> torch.Tensor:
    return torch.randint(
        0, 256, (2, c, h, w), dtype=torch.uint8, generator=torch.Generator().manual_seed(3)
    )


@pytest.mark.parametrize("interp", ["bilinear", "bicubic"])
def test_crop_mode_equals_torchvision_resize_centercrop(interp: str) -> None:
    p = Preprocessing(56, interp, "crop", 0.875, MEAN, STD)
    img = _img()
    mode = TF.InterpolationMode.BILINEAR if interp == "bilinear" else TF.InterpolationMode.BICUBIC
    ref = TF.resize(img.float() / 255, [64], interpolation=mode, antialias=True)
    ref = TF.normalize(TF.center_crop(ref, [56, 56]), MEAN, STD)
    torch.testing.assert_close(preprocess(img, p), ref, atol=1e-5, rtol=1e-5)


def test_squash_mode_and_grayscale_replication() -> None:
    p = Preprocessing(32, "bilinear", "squash", 1.0, (0.5,) * 3, (0.5,) * 3)
    gray = _img(c=1)
    out = preprocess(gray, p)
    assert out.shape == (2, 3, 32, 32)
    torch.testing.assert_close(out[:, 0], out[:, 2])
    torch.testing.assert_close(out, preprocess(gray.expand(-1, 3, -1, -1).contiguous(), p))


def test_pad_mode_fills_the_short_side() -> None:
    p = Preprocessing(40, "bilinear", "pad", 1.0, (0.0,) * 3, (1.0,) * 3, pad_fill=(0.0, 0.0, 0.0))
    img = torch.full((1, 3, 20, 40), 255, dtype=torch.uint8)
    out = preprocess(img, p)
    assert torch.allclose(out[0, :, 20, :], torch.ones(3, 40))  # centre row: image
    assert torch.allclose(out[0, :, 0, :], torch.zeros(3, 40))  # top row: padding


def test_hash_covers_every_parameter() -> None:
    base = Preprocessing(224, "bicubic", "crop", 0.9, MEAN, STD)
    variants = [
        Preprocessing(225, "bicubic", "crop", 0.9, MEAN, STD),
        Preprocessing(224, "bilinear", "crop", 0.9, MEAN, STD),
        Preprocessing(224, "bicubic", "squash", 0.9, MEAN, STD),
        Preprocessing(224, "bicubic", "crop", 0.875, MEAN, STD),
        Preprocessing(224, "bicubic", "crop", 0.9, (0.5,) * 3, STD),
        Preprocessing(224, "bicubic", "crop", 0.9, MEAN, (0.228, 0.224, 0.225)),
        Preprocessing(224, "bicubic", "crop", 0.9, MEAN, STD, antialias=False),
    ]
    hashes = {v.sha256() for v in variants}
    assert base.sha256() not in hashes and len(hashes) == len(variants)
    assert base.sha256() == Preprocessing(224, "bicubic", "crop", 0.9, MEAN, STD).sha256()


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        (torch.zeros(1, 3, 8, 8), "must be uint8"),
        (torch.zeros(1, 3, 8, 8, dtype=torch.int16), "must be uint8"),
        (torch.zeros(3, 8, 8, dtype=torch.uint8), "N×C×H×W"),
        (torch.zeros(1, 4, 8, 8, dtype=torch.uint8), "C in"),
        (torch.zeros(0, 3, 8, 8, dtype=torch.uint8), "non-empty"),
    ],
)
def test_bad_inputs_raise(bad: torch.Tensor, match: str) -> None:
    p = Preprocessing(16, "bilinear", "crop", 1.0, MEAN, STD)
    with pytest.raises(EncoderError, match=match):
        preprocess(bad, p)


@pytest.mark.parametrize("width", range(32, 48))
def test_crop_offsets_follow_torchvision_and_transformers(width: int) -> None:
    """Every margin 0..15 on the long side: ``half_even`` crops as torchvision's
    ``center_crop``, ``floor`` as transformers' ``center_crop`` (numpy, channels first)."""
    from dataclasses import replace

    from transformers.image_transforms import center_crop

    img = _img(h=32, w=width)
    p = Preprocessing(32, "bilinear", "crop", 1.0, (0.0,) * 3, (1.0,) * 3)
    x = img.float() / 255
    torch.testing.assert_close(preprocess(img, p), TF.center_crop(x, [32, 32]))
    floor = replace(p, crop_rounding="floor")
    ref = torch.from_numpy(center_crop(x[0].numpy(), (32, 32), data_format="channels_first"))
    torch.testing.assert_close(preprocess(img, floor)[0], ref)
    assert preprocess(img, p).shape == (2, 3, 32, 32)
