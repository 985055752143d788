"""Upstream-equivalent features (#27 point 2), default suite at tiny sizes.

For each family below, the upstream model is built the way its authors do (their library and
class: ``timm.create_model``, transformers ``AutoModel`` / ``AutoImageProcessor`` from a locally
saved tiny hub folder) with random weights, saved in the upstream file layout, loaded through
crsbench's card, and crsbench's feature (its preprocessing + forward) is compared with the
upstream pipeline's (the authors' preprocessing + forward + the output they use) on images of
each modality. Bound: max abs difference <= 1e-4 in float32.

Images have the size at which the authors' first resize is the identity (PIL / HF resize
kernels are not what this pins; tests/unit/encoders/test_encoder_upstream_pixels.py and
docs/encoders.md say so). 16-bit files reach both pipelines as the feature engine decodes them
(min..max to 0..255): PIL's ``convert('RGB')`` of a 16-bit image saturates, a pinned departure.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from encoder_images import (
    KINDS,
    TOL,
    as_8bit,
    as_tensor,
    cached_pipelines,
    images,
    max_abs_diff,
    perturb,
)
from PIL import Image

from crsbench.encoders.backends import hf_backend

Upstream = Callable[[Image.Image], torch.Tensor]


# --- timm families: hub folder with model.safetensors, loaded by timm's pretrained path ------
TIMM = {
    # name: (timm model, tiny kwargs, crop_pct override or None = the pretrained cfg's)
    "resnet50": ("resnet50.tv_in1k", {"layers": [1, 1, 1, 1]}, None),
    "vit_b16": (
        "vit_base_patch16_224.augreg2_in21k_ft_in1k",
        {"depth": 4, "embed_dim": 64, "num_heads": 2, "img_size": 32},
        None,
    ),
    # MAE: the authors' linear-probe crop (main_linprobe.py transform_val: 256 -> 224)
    "mae": (
        "vit_base_patch16_224.mae",
        {"depth": 4, "embed_dim": 64, "num_heads": 2, "img_size": 32},
        0.875,
    ),
}


def _timm_upstream(name: str, folder: Path, true: bool = False) -> tuple[Path, Upstream, int]:
    """timm: ``create_model`` (with its classifier, as on the hub), saved as
    ``model.safetensors``; the upstream pipeline loads it as timm loads a hub file
    (``pretrained=True``, ``pretrained_cfg_overlay=dict(file=...)``, ``num_classes=0``) and
    uses ``resolve_data_config`` + ``create_transform`` at the tiny input size."""
    import timm
    from safetensors.torch import save_file
    from timm.data import create_transform, resolve_data_config

    arch, tiny, crop = TIMM[name]
    tiny = {} if true else tiny  # true: the architecture's own size
    src = timm.create_model(arch, pretrained=False, num_classes=10, **tiny)
    perturb(src)
    folder.mkdir(parents=True)
    save_file(
        {k: v.contiguous() for k, v in src.state_dict().items()}, folder / "model.safetensors"
    )
    overlay = {"file": str(folder / "model.safetensors"), "num_classes": 10}
    up = timm.create_model(
        arch, pretrained=True, pretrained_cfg_overlay=overlay, num_classes=0, **tiny
    ).eval()
    size = 224 if true else 32
    args: dict[str, Any] = {"input_size": (3, size, size)}
    if crop is not None:
        args["crop_pct"] = crop
    cfg = resolve_data_config(args, model=up)
    transform = create_transform(**cfg)

    def upstream(image: Image.Image) -> torch.Tensor:
        return up(transform(image.convert("RGB")).unsqueeze(0))

    upstream.model, upstream.transform = up, transform  # type: ignore[attr-defined]
    return folder, upstream, int(size / cfg["crop_pct"])


def _retfound_upstream(folder: Path, true: bool = False) -> tuple[Path, Upstream, int]:
    """RETFound (rmaphoh/RETFound_MAE models_vit.py + main_finetune.py): a timm ViT-L/16 with
    ``global_pool`` (mean of patch tokens -> ``fc_norm``), ``checkpoint['model']`` loaded with
    ``strict=False`` (missing: ``head.*``, ``fc_norm.*`` at init); eval transform
    Resize(256, bicubic), CenterCrop(224), ImageNet mean/std (util/datasets.py build_transform)."""
    import timm
    from torchvision import transforms as T

    tiny = {} if true else {"depth": 4, "embed_dim": 64, "num_heads": 2, "img_size": 32}
    size, dim = (224, 1024) if true else (32, 64)
    src = timm.create_model("vit_large_patch16_224", pretrained=False, num_classes=0, **tiny)
    perturb(src)
    sd = {k: v for k, v in src.state_dict().items()}
    sd.update({"mask_token": torch.zeros(1, 1, dim), "decoder_embed.weight": torch.zeros(8, dim)})
    folder.mkdir(parents=True)
    torch.save({"model": sd, "epoch": 3}, folder / "retfound.pth")
    up = timm.create_model(
        "vit_large_patch16_224", pretrained=False, num_classes=5, global_pool="avg", **tiny
    ).eval()
    ckpt = torch.load(folder / "retfound.pth", weights_only=True)["model"]
    missing, _ = up.load_state_dict(ckpt, strict=False)
    assert set(missing) <= {"head.weight", "head.bias", "fc_norm.weight", "fc_norm.bias"}
    transform = T.Compose(
        [
            T.Resize(int(size / 0.875), interpolation=T.InterpolationMode.BICUBIC),
            T.CenterCrop(size),
            T.ToTensor(),
            T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
        ]
    )

    def upstream(image: Image.Image) -> torch.Tensor:
        x = up.forward_features(transform(image.convert("RGB")).unsqueeze(0))
        return up.forward_head(x, pre_logits=True)

    return folder / "retfound.pth", upstream, int(size / 0.875)


# --- transformers families: hub folder (config, safetensors, preprocessor_config) ------------
HF_TINY = hf_backend.TINY  # the tiny size crsbench builds (one home)


def _dinov2_processor(name: str, true: bool = False) -> Any:
    """The hub's BitImageProcessor at the tiny size: dinov2-base resizes the shorter side to
    256 and crops 224 (ImageNet mean/std); rad-dino resizes to 518 and crops 518 (its own
    mean/std). Bicubic, rescale 1/255, convert to RGB in both."""
    from transformers import BitImageProcessor

    short, crop = {"dinov2": (256, 224), "rad_dino": (518, 518)}[name] if true else (64, 56)
    if name == "dinov2":
        return BitImageProcessor(
            size={"shortest_edge": short},
            crop_size={"height": crop, "width": crop},
            image_mean=[0.485, 0.456, 0.406],
            image_std=[0.229, 0.224, 0.225],
        )
    return BitImageProcessor(
        size={"shortest_edge": crop},
        crop_size={"height": crop, "width": crop},
        image_mean=[0.5307] * 3,
        image_std=[0.2583] * 3,
    )


def _dinov2_upstream(name: str, folder: Path, true: bool = False) -> tuple[Path, Upstream, int]:
    """DINOv2 / RAD-DINO model cards: ``AutoModel`` + ``AutoImageProcessor`` from the hub folder,
    ``outputs.pooler_output`` (CLS after the final layernorm)."""
    from transformers import AutoImageProcessor, AutoModel, Dinov2Config, Dinov2Model

    src = Dinov2Model(Dinov2Config(**(hf_backend.VIT_B14 if true else HF_TINY)))
    perturb(src)
    src.save_pretrained(folder)
    proc = _dinov2_processor(name, true)
    proc.save_pretrained(folder)
    side = proc.size["shortest_edge"]
    model = AutoModel.from_pretrained(folder).eval()
    proc = AutoImageProcessor.from_pretrained(folder)

    def upstream(image: Image.Image) -> torch.Tensor:
        return model(**proc(images=image, return_tensors="pt")).pooler_output

    return folder, upstream, side


def _siglip_upstream(name: str, folder: Path, true: bool = False) -> tuple[Path, Upstream, int]:
    """SigLIP / MedSigLIP model cards: ``AutoModel`` (both towers) + ``AutoProcessor``'s image
    processor (squash to the input size, rescale, mean/std 0.5); ``get_image_features`` (the
    vision tower's MAP-head ``pooler_output``)."""
    from transformers import (
        AutoImageProcessor,
        AutoModel,
        SiglipConfig,
        SiglipImageProcessor,
        SiglipModel,
    )

    text = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1}
    side = (384 if name == "siglip" else 448) if true else 56
    vision = {**hf_backend.SO400M, "image_size": side} if true else HF_TINY
    cfg = SiglipConfig(
        vision_config=vision, text_config={**text, "num_attention_heads": 2, "vocab_size": 50}
    )
    src = SiglipModel(cfg)
    perturb(src)
    src.save_pretrained(folder)
    resample = 3 if name == "siglip" else 2  # so400m: bicubic; medsiglip-448: bilinear
    SiglipImageProcessor(size={"height": side, "width": side}, resample=resample).save_pretrained(
        folder
    )
    model = AutoModel.from_pretrained(folder).eval()
    proc = AutoImageProcessor.from_pretrained(folder)

    def upstream(image: Image.Image) -> torch.Tensor:
        out = model.get_image_features(**proc(images=image.convert("RGB"), return_tensors="pt"))
        return out if isinstance(out, torch.Tensor) else out.pooler_output

    return folder, upstream, side


def _medgemma_upstream(folder: Path, true: bool = False) -> tuple[Path, Upstream, int]:
    """MedGemma (Gemma-3): the whole ``Gemma3ForConditionalGeneration`` saved as a hub folder
    (with ``model.safetensors.index.json``, as the 4B release), loaded by
    ``AutoModelForImageTextToText`` + the Gemma-3 image processor (squash, bilinear, 0.5). The
    model has no pooled image output: crsbench's feature, the mean of the vision tower's tokens,
    is compared with the same mean of the upstream tower (the tower is what is pinned)."""
    import json

    from transformers import (
        AutoImageProcessor,
        AutoModelForImageTextToText,
        Gemma3Config,
        Gemma3ForConditionalGeneration,
        Gemma3ImageProcessor,
    )

    text = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "head_dim": 16}
    text.update({"num_attention_heads": 2, "num_key_value_heads": 1, "vocab_size": 262208})
    side = 896 if true else 56
    vision = {**(hf_backend.SO400M if true else HF_TINY), "image_size": side}
    vision["vision_use_head"] = False
    src = Gemma3ForConditionalGeneration(
        Gemma3Config(text_config=text, vision_config=vision, mm_tokens_per_image=4)
    )
    perturb(src)
    src.save_pretrained(folder)
    from safetensors import safe_open

    with safe_open(folder / "model.safetensors", "pt") as f:
        weight_map = dict.fromkeys(f.keys(), "model.safetensors")
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    Gemma3ImageProcessor(size={"height": side, "width": side}, resample=2).save_pretrained(folder)
    model = AutoModelForImageTextToText.from_pretrained(folder).eval()
    proc = AutoImageProcessor.from_pretrained(folder)

    def upstream(image: Image.Image) -> torch.Tensor:
        x = proc(images=image.convert("RGB"), return_tensors="pt")["pixel_values"]
        return model.model.vision_tower(pixel_values=x).last_hidden_state.mean(dim=1)

    return folder, upstream, side


# --- the comparison -------------------------------------------------------------------------
def upstream_of(name: str, folder: Path, true: bool = False) -> tuple[Path, Upstream, int]:
    """``(weights_path, upstream pipeline, shorter image side)`` for family ``name``, at
    crsbench's tiny size or (``true``) at the real architecture size."""
    if name in TIMM:
        return _timm_upstream(name, folder, true)
    if name == "retfound":
        return _retfound_upstream(folder, true)
    if name in ("dinov2", "rad_dino"):
        return _dinov2_upstream(name, folder, true)
    if name == "medgemma":
        return _medgemma_upstream(folder, true)
    return _siglip_upstream(name, folder, true)


# Crop families get images 19 px wider than the shorter side: with the shorter side's own
# margin, odd margins of 3 mod 4 occur (vit_b16: 3; resnet50, mae, retfound: 23; dinov2: 27;
# rad_dino: 19), where the two crop-rounding rules differ by one pixel.
FAMILIES = [
    "resnet50",
    "vit_b16",
    "mae",
    "retfound",
    "dinov2",
    "rad_dino",
    "siglip",
    "medsiglip",
    "medgemma",
]
SQUASH = {"siglip", "medsiglip", "medgemma"}  # square images: the squash resize is the identity


@pytest.fixture(scope="module")
def pipelines(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[str], tuple[Any, Upstream, int]]:
    """``pipelines(name)``: crsbench's encoder loaded from the upstream checkpoint, the upstream
    pipeline, and the shorter image side; built once per module."""
    return cached_pipelines(upstream_of, tmp_path_factory)


def _features(enc: Any, upstream: Upstream, a: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    a = as_8bit(a)
    with torch.inference_mode():
        return enc.module(enc.preprocess(as_tensor(a))), upstream(Image.fromarray(a))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", FAMILIES)
def test_feature_matches_the_upstream_pipeline(name: str, kind: str, pipelines: Any) -> None:
    enc, upstream, side = pipelines(name)
    width = side if name in SQUASH else side + 19
    mine, theirs = _features(enc, upstream, images(side, width)[kind])
    assert mine.shape == theirs.shape and mine.shape[0] == 1
    assert float(theirs.abs().max()) > 1e-2  # a real feature, not zeros
    assert max_abs_diff(mine, theirs) <= TOL


def test_a_different_checkpoint_gives_a_different_feature(pipelines: Any, tmp_path: Path) -> None:
    """The comparison can fail: an upstream model with other weights is far from crsbench's."""
    enc, _, side = pipelines("dinov2")
    torch.manual_seed(1)
    _, other, _ = _dinov2_upstream("dinov2", tmp_path / "other")
    mine, theirs = _features(enc, other, images(side, side + 16)["rgb8"])
    assert max_abs_diff(mine, theirs) > 1e-2


def test_medsiglip_departs_from_the_serving_embedding_by_its_norm(pipelines: Any) -> None:
    """Pinned departure: Google's serving code returns ``image_embeds`` = ``pooler_output`` /
    its L2 norm; crsbench keeps ``pooler_output`` (the probe standardises features itself)."""
    enc, upstream, side = pipelines("medsiglip")
    mine, pooled = _features(enc, upstream, images(side, side)["grey8"])
    served = pooled / pooled.norm(dim=-1, keepdim=True)
    assert abs(float(mine.norm()) - 1.0) > 1e-2
    assert max_abs_diff(mine / mine.norm(dim=-1, keepdim=True), served) <= TOL


def test_16_bit_files_depart_from_pil_saturation(pipelines: Any) -> None:
    """Pinned departure: PIL's ``convert('RGB')`` of a 16-bit image clips at 255 (white);
    crsbench's decode stretches min..max to 0..255 first, as the feature engine does."""
    enc, upstream, side = pipelines("resnet50")
    a = images(side, side + 16)["grey16"]
    with torch.inference_mode():
        raw = upstream(Image.fromarray(a))
    mine, _ = _features(enc, upstream, a)
    assert max_abs_diff(mine, raw) > 1e-2


@pytest.mark.parametrize("name", ["vit_b16", "dinov2"])
def test_odd_crop_margins_split_the_upstream_way(name: str, pipelines: Any) -> None:
    """An odd crop margin starts where the family's upstream crop starts: torchvision's
    ``CenterCrop`` (timm, open_clip) at ``int(round(m / 2.0))``, half to even, so 3 -> 2 and
    19 -> 10; transformers' ``center_crop`` at ``m // 2``, so 27 -> 13. A crop one pixel off
    would fail the upstream comparison above (it did before the card carried the rule)."""
    from dataclasses import replace

    from crsbench.encoders.base import preprocessing_of
    from crsbench.encoders.preprocess import preprocess

    enc, upstream, side = pipelines(name)
    a = images(side, side + 19)["rgb8"]  # vit_b16: 35 x 54 -> 32 (margins 3, 22); dinov2 64 x 83
    mine = enc.preprocess(as_tensor(a))[0]
    s = enc.input_size
    top, left = ((side - s) // 2, (side + 19 - s) // 2)  # floor
    if name == "vit_b16":
        top, left = int(round((side - s) / 2.0)), int(round((side + 19 - s) / 2.0))
        assert (top, left) == (2, 11)
    else:
        assert (top, left) == (4, 13)
    mean = torch.tensor(enc.preprocessing.mean).view(3, 1, 1)
    std = torch.tensor(enc.preprocessing.std).view(3, 1, 1)
    full = (torch.from_numpy(a).permute(2, 0, 1).float() / 255 - mean) / std
    assert max_abs_diff(mine, full[:, top : top + s, left : left + s]) <= TOL
    # the other rule is one pixel off: the comparison would see it
    other = "floor" if enc.card.crop_rounding == "half_even" else "half_even"
    shifted = preprocessing_of(replace(enc.card, crop_rounding=other), s)
    with torch.inference_mode():
        off = enc.module(preprocess(as_tensor(a), shifted))
        assert max_abs_diff(off, upstream(Image.fromarray(a))) > 1e-3
