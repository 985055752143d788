"""Upstream-equivalent features of the open_clip families (#27 point 2), tiny sizes.

The upstream model is what ``open_clip.create_model_and_transforms(name, pretrained=FILE)``
builds from a registered model config (``open_clip.add_model_config``) and a checkpoint in the
hub layout (the whole two-tower state dict); the feature is ``encode_image`` after open_clip's
eval transform. crsbench loads the same file through the card. Bound: max abs difference
<= 1e-4 in float32, on the four image kinds, at sizes where the first resize is the identity.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

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

TEXT = {"context_length": 8, "vocab_size": 50, "width": 32, "heads": 2, "layers": 1}
CONFIGS: dict[str, dict[str, Any]] = {
    # OpenAI ViT-B/16 QuickGELU at the card's tiny size (hub: open_clip_model.safetensors)
    "clip": {
        "embed_dim": 32,
        "quick_gelu": True,
        "vision_cfg": {
            "image_size": 64,
            "layers": 4,
            "width": 64,
            "head_width": 64,
            "patch_size": 16,
        },
        "text_cfg": TEXT,
    },
    # BiomedCLIP: timm ViT trunk + linear projection (hub: open_clip_pytorch_model.bin); the
    # text tower is a custom one (``text.*`` keys), as the PubMedBERT tower is upstream
    "biomedclip": {
        "embed_dim": 32,
        "vision_cfg": {
            "timm_model_name": "vit_tiny_patch16_224",
            "timm_model_pretrained": False,
            "timm_pool": "",
            "timm_proj": "linear",
            "image_size": 224,
        },
        "text_cfg": TEXT,
    },
}
#: The real architectures: OpenAI ViT-B/16 (open_clip ``ViT-B-16-quickgelu``) and BiomedCLIP's
#: ViT-B/16 trunk (its hub ``open_clip_config.json``); small text towers (never built by crsbench).
TRUE: dict[str, dict[str, Any]] = {
    "clip": {
        **CONFIGS["clip"],
        "embed_dim": 512,
        "vision_cfg": {"image_size": 224, "layers": 12, "width": 768, "patch_size": 16},
    },
    "biomedclip": {
        **CONFIGS["biomedclip"],
        "embed_dim": 512,
        "vision_cfg": {
            **CONFIGS["biomedclip"]["vision_cfg"],
            "timm_model_name": "vit_base_patch16_224",
        },
    },
}
FILES = {"clip": "open_clip_model.safetensors", "biomedclip": "open_clip_pytorch_model.bin"}
Upstream = Callable[[Image.Image], torch.Tensor]


def _save(model: torch.nn.Module, path: Path) -> None:
    sd = {k: v.contiguous() for k, v in model.state_dict().items()}
    if path.suffix == ".safetensors":
        from safetensors.torch import save_file

        save_file(sd, path)
    else:
        torch.save(sd, path)


def upstream_of(name: str, folder: Path, true: bool = False) -> tuple[Path, Upstream, int]:
    """Save a random model (tiny, or ``true`` size) in the hub layout; the upstream pipeline
    loads it back."""
    import open_clip

    folder.mkdir(parents=True)
    config = folder / f"crs-{'true' if true else 'tiny'}-{name}.json"
    config.write_text(json.dumps((TRUE if true else CONFIGS)[name]))
    open_clip.add_model_config(config)
    custom = name == "biomedclip"
    src = open_clip.create_model(config.stem, force_custom_text=custom)
    perturb(src)
    _save(src, folder / FILES[name])
    model, _, transform = open_clip.create_model_and_transforms(
        config.stem, pretrained=str(folder / FILES[name]), force_custom_text=custom
    )
    model.eval()

    def upstream(image: Image.Image) -> torch.Tensor:
        return model.encode_image(transform(image.convert("RGB")).unsqueeze(0))

    return folder, upstream, (TRUE if true else CONFIGS)[name]["vision_cfg"]["image_size"]


@pytest.fixture(scope="module")
def pipelines(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[str], tuple[Any, Upstream, int]]:
    """``pipelines(name)``: crsbench's encoder from the upstream checkpoint, the upstream
    pipeline, and the image's shorter side; built once per module."""
    return cached_pipelines(upstream_of, tmp_path_factory)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_feature_matches_open_clip(name: str, kind: str, pipelines: Any) -> None:
    enc, upstream, side = pipelines(name)
    a = as_8bit(images(side, side + 19)[kind])  # long-side margin 19: odd, 3 mod 4
    with torch.inference_mode():
        mine = enc.module(enc.preprocess(as_tensor(a)))
        theirs = upstream(Image.fromarray(a))
    assert float(theirs.abs().max()) > 1e-2  # a real feature, not zeros
    assert max_abs_diff(mine, theirs) <= TOL
