"""The authors' pixel pipelines, re-implemented from their code, against crsbench's preprocessing.

Each upstream function cites the file and function it follows. Images: 8-bit RGB, 8-bit grey,
16-bit grey and a narrow-range 8-bit grey, at sizes where the authors' first resize is the
identity (their PIL/uint8 resize kernels are not what this pins; docs/encoders.md says so).
Bound: max abs difference <= 1e-4 in float32.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from encoder_images import KINDS, TOL, as_8bit, as_tensor, images, max_abs_diff
from PIL import Image
from torchvision import transforms as T
from upstream_specialist import himl_remap_to_uint8

from crsbench.encoders import build, get_card
from crsbench.encoders.base import preprocessing_of
from crsbench.encoders.preprocess import preprocess


def _crsbench(name: str, a: np.ndarray, size: int, recipe: str | None = None) -> torch.Tensor:
    card = get_card(name).with_recipe(recipe)
    return preprocess(as_tensor(a), preprocessing_of(card, size))[0]


def _close(mine: torch.Tensor, theirs: torch.Tensor) -> None:
    assert max_abs_diff(mine, theirs) <= TOL


# --- BioViL: hi-ml-multimodal ----------------------------------------------------------------
def _himl_biovil(a: np.ndarray) -> torch.Tensor:
    """io.py load_image (remap, convert('L')), then transforms.py
    create_chest_xray_transform_for_inference(512, 480): Resize, CenterCrop, ToTensor,
    ExpandChannels (repeat_interleave to 3 channels)."""
    image = Image.fromarray(himl_remap_to_uint8(a)).convert("L")
    x = T.Compose([T.Resize(512), T.CenterCrop(480), T.ToTensor()])(image)
    return torch.repeat_interleave(x, 3, dim=0)


@pytest.mark.parametrize("kind", KINDS)
def test_biovil_matches_himl_loader_and_transform(kind: str) -> None:
    a = images(512, 640)[kind]
    _close(_crsbench("biovil", a, 480), _himl_biovil(a))


def test_biovil_stretch_and_luma_are_what_changed() -> None:
    """Without the stretch and luma (the old card), narrow-range and colour images differ."""
    card = get_card("biovil")
    from dataclasses import replace

    old = preprocessing_of(replace(card, intensity="none", luma=False), 480)
    for kind in ("narrow", "rgb8"):
        a = images(512, 640)[kind]
        assert float((preprocess(as_tensor(a), old)[0] - _himl_biovil(a)).abs().max()) > 0.05


def test_biovil_features_match_on_the_tiny_model() -> None:
    enc = build("biovil", pretrained=False, tiny=True)
    a = images(512, 640)["narrow"]
    enc.set_input_size(480)
    mine = enc.forward_features(enc.preprocess(as_tensor(a)))[1.0]
    theirs = enc.forward_features(_himl_biovil(a).unsqueeze(0))[1.0]
    assert float((mine - theirs).abs().max()) <= TOL


# --- MAE: facebookresearch/mae ---------------------------------------------------------------
def _mae_linprobe(image: Image.Image) -> torch.Tensor:
    """mae main_linprobe.py, transform_val: Resize(256, bicubic), CenterCrop(224), ToTensor,
    Normalize(ImageNet); images come from ImageFolder's loader, convert('RGB')."""
    t = T.Compose(
        [
            T.Resize(256, interpolation=T.InterpolationMode.BICUBIC),
            T.CenterCrop(224),
            T.ToTensor(),
            T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
        ]
    )
    return t(image.convert("RGB"))


@pytest.mark.parametrize("kind", KINDS)
def test_mae_matches_the_linear_probe_recipe(kind: str) -> None:
    a = as_8bit(images(256, 320)[kind])
    _close(_crsbench("mae", a, 224), _mae_linprobe(Image.fromarray(a)))
    assert get_card("mae").crop_pct == 0.875


# --- LLaVA-Med: microsoft/LLaVA-Med ----------------------------------------------------------
def _llava_med(image: Image.Image) -> torch.Tensor:
    """llava/mm_utils.py process_images ('pad'): 'L' images get background
    int(255 * sum(mean) / 3) = 114, others tuple(int(255 * m)); expand2square (centred here,
    upstream adds a random 0/1 px offset); then CLIPImageProcessor (336, CLIP mean/std)."""
    from transformers import CLIPImageProcessor

    proc = CLIPImageProcessor(size={"shortest_edge": 336}, crop_size=336)
    mean = proc.image_mean
    if image.mode == "L":
        background: int | tuple[int, ...] = int(255 * sum(mean) / len(mean))
    else:
        background = tuple(int(x * 255) for x in mean)
    w, h = image.size
    side = max(w, h)
    canvas = Image.new(image.mode, (side, side), background)
    canvas.paste(image, ((side - w) // 2, (side - h) // 2))
    return torch.from_numpy(proc(canvas, return_tensors="np")["pixel_values"][0])


@pytest.mark.parametrize("kind", KINDS)
def test_llava_med_pads_grey_images_with_grey_114(kind: str) -> None:
    a = as_8bit(images(200, 336)[kind])
    _close(_crsbench("llava_med", a, 336), _llava_med(Image.fromarray(a)))
    # the engine hands grey files over as three equal channels: still padded grey
    if a.ndim == 2:
        rgb = np.repeat(a[:, :, None], 3, axis=2)
        _close(_crsbench("llava_med", rgb, 336), _llava_med(Image.fromarray(a)))


# --- MedSigLIP: Google-Health/medsiglip ------------------------------------------------------
def _tf_bilinear_np(a: np.ndarray, h: int, w: int) -> np.ndarray:
    """tf.image.resize(method='bilinear', antialias=False): TensorFlow's
    resize_bilinear_op.cc (HalfPixelScaler, compute_interpolation_weights, compute_lerp)."""

    def weights(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        scale = np.float32(n_in) / np.float32(n_out)
        pos = (np.arange(n_out, dtype=np.float32) + np.float32(0.5)) * scale - np.float32(0.5)
        lo = np.floor(pos)
        upper = np.minimum(np.ceil(pos).astype(int), n_in - 1)
        return np.maximum(lo.astype(int), 0), upper, (pos - lo).astype(np.float32)

    y0, y1, yl = weights(a.shape[0], h)
    x0, x1, xl = weights(a.shape[1], w)
    f = a.astype(np.float32)
    xl3, yl3 = xl[None, :, None], yl[:, None, None]
    top = f[y0][:, x0] + (f[y0][:, x1] - f[y0][:, x0]) * xl3
    bottom = f[y1][:, x0] + (f[y1][:, x1] - f[y1][:, x0]) * xl3
    return top + (bottom - top) * yl3


def _medsiglip_model_card(a: np.ndarray) -> torch.Tensor:
    """medsiglip notebooks/quick_start_with_hugging_face.ipynb: Image.open(...).convert('RGB'),
    resize() = tf.image.resize(448, bilinear, antialias=False).numpy().astype(np.uint8), then
    the HF processor (448 already: rescale 1/255, normalise 0.5)."""
    from transformers import SiglipImageProcessor

    rgb = np.asarray(Image.fromarray(a).convert("RGB"))
    small = _tf_bilinear_np(rgb, 448, 448).astype(np.uint8)
    proc = SiglipImageProcessor(size={"height": 448, "width": 448})
    return torch.from_numpy(proc(Image.fromarray(small), return_tensors="np")["pixel_values"][0])


def _medsiglip_serving(a: np.ndarray) -> torch.Tensor:
    """medsiglip python/serving/predictor.py _InputImageIter._pre_process: / dtype max,
    1 -> 3 channels, _zero_pad_image_to_square, SiglipImageProcessor(do_rescale=False)."""
    from transformers import SiglipImageProcessor

    img = a.astype(np.float32) / float(np.iinfo(a.dtype).max)
    img = img[:, :, None] if img.ndim == 2 else img
    if img.shape[-1] == 1:
        img = np.concatenate([img, img, img], axis=-1)
    h, w = img.shape[:2]
    d = abs(h - w)
    pad = (
        ((d // 2, d - d // 2), (0, 0), (0, 0)) if h < w else ((0, 0), (d // 2, d - d // 2), (0, 0))
    )
    img = np.pad(img, pad)
    proc = SiglipImageProcessor(do_rescale=False, size={"height": 448, "width": 448})
    out = proc.preprocess(
        [img], data_format="channels_first", input_data_format="channels_last", return_tensors="np"
    )
    return torch.from_numpy(out["pixel_values"][0])


@pytest.mark.parametrize("shape", [(300, 400), (600, 520)])
@pytest.mark.parametrize("kind", ["rgb8", "grey8", "narrow"])
def test_medsiglip_default_is_the_model_card_recipe(kind: str, shape: tuple[int, int]) -> None:
    card = get_card("medsiglip")
    assert card.recipe == "model_card" and card.resize_mode == "squash" and not card.antialias
    a = images(*shape)[kind]
    _close(_crsbench("medsiglip", a, 448), _medsiglip_model_card(a))


@pytest.mark.parametrize("kind", KINDS)
def test_medsiglip_serving_recipe_zero_pads(kind: str) -> None:
    a = images(448, 300)[kind]
    _close(_crsbench("medsiglip", a, 448, recipe="serving"), _medsiglip_serving(a))


def test_medsiglip_recipes_differ_and_unknown_is_refused() -> None:
    from crsbench.core.errors import RegistryError

    a = images(448, 300)["rgb8"]
    diff = _crsbench("medsiglip", a, 448) - _crsbench("medsiglip", a, 448, recipe="serving")
    assert float(diff.abs().max()) > 0.1
    enc = build("medsiglip", pretrained=False, tiny=True, recipe="serving")
    assert enc.card.recipe == "serving" and enc.preprocessing.resize_mode == "pad"
    assert enc.preprocess_hash != build("medsiglip", pretrained=False, tiny=True).preprocess_hash
    with pytest.raises(RegistryError, match="'medsiglip'.*recipe must be one of"):
        get_card("medsiglip").with_recipe("nope")
