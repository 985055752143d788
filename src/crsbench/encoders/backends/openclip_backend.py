"""open_clip backend, vision towers only: CLIP (OpenAI ViT-B/16), BiomedCLIP, CheXzero.

The text tower is never built: the vision tower class open_clip would use is created directly
(``open_clip.model._build_vision_tower`` / ``open_clip.timm_model.TimmModel``) and only the
``visual.*`` tensors of the checkpoint are loaded into it, strictly: every other key must be
one the card names as ignorable (its text tower).
"""

from __future__ import annotations

from typing import Any

from crsbench.encoders.backends.common import load_checked, seeded, tiny_seed, unwrap
from crsbench.encoders.base import Backbone, BuildContext
from crsbench.encoders.weights import find_file, load_state_dict, verify_sha256


def _vit_tower(
    embed_dim: int, layers: int, width: int, head_width: int, patch: int, size: int
) -> Any:
    from open_clip.model import CLIPVisionCfg, _build_vision_tower

    cfg = CLIPVisionCfg(
        layers=layers, width=width, head_width=head_width, patch_size=patch, image_size=size
    )
    return _build_vision_tower(embed_dim, cfg, quick_gelu=True)


def clip_tower_backbone(visual: Any, input_size: int, files: tuple) -> Backbone:
    """open_clip ``VisionTransformer``: taps = resblocks; tap pooling = ``ln_post`` of CLS."""

    def pool(tokens: Any) -> Any:
        return visual.ln_post(tokens[:, 0])

    return Backbone(visual, list(visual.transformer.resblocks), pool, input_size, files)


def _load_visual(
    visual: Any, ctx: BuildContext, filename: str, repo_id: str | None, hint: str = ""
) -> tuple:
    if not ctx.load_weights:
        return ()
    card = ctx.card
    path = find_file(
        card.name,
        filename,
        weights_path=ctx.weights_path,
        repo_id=repo_id,
        revision=card.revision,
        hint=hint,
    )
    if not ctx.tiny:
        verify_sha256(path, card.weights_sha256)
    sd = unwrap(load_state_dict(path))
    if sd and all(k.startswith("module.") for k in sd):  # saved from DataParallel
        sd = {k.removeprefix("module."): v for k, v in sd.items()}
    load_checked(
        visual,
        sd,
        name=card.name,
        source=str(path),
        prefix="visual.",
        allow_missing=card.allow_missing,
        ignore_unexpected=card.ignore_unexpected,
    )
    return (path,)


def _openai_vit(
    ctx: BuildContext, patch: int, filename: str, repo_id: str | None, hint: str = ""
) -> Backbone:
    size = 64 if ctx.tiny else ctx.card.input_size
    with seeded(tiny_seed(ctx.card.name)):
        if ctx.tiny:  # heads of width 64, as OpenAI's build_model infers (width // 64)
            visual = _vit_tower(32, 4, 64, 64, patch, size)
        else:
            visual = _vit_tower(ctx.card.embed_dim, 12, 768, 64, patch, size)
    files = _load_visual(visual, ctx, filename, repo_id, hint)
    return clip_tower_backbone(visual, size, files)


def build_clip(ctx: BuildContext) -> Backbone:
    """OpenAI CLIP ViT-B/16 (QuickGELU) vision tower; embedding = projected ``encode_image``."""
    return _openai_vit(
        ctx, 16, "open_clip_model.safetensors", "timm/vit_base_patch16_clip_224.openai"
    )


def build_chexzero(ctx: BuildContext) -> Backbone:
    """CheXzero: OpenAI-layout CLIP ViT-B/32 fine-tuned on MIMIC-CXR; projected 512-d."""
    return _openai_vit(
        ctx,
        32,
        "best_64_5e-05_original_22000_0.864.pt",
        None,
        hint="CheXzero checkpoints are on Google Drive (github.com/rajpurkarlab/CheXzero README).",
    )


def build_biomedclip(ctx: BuildContext) -> Backbone:
    """BiomedCLIP vision tower: open_clip ``TimmModel`` (timm ViT-B/16 trunk + linear proj)."""
    from open_clip.timm_model import TimmModel

    with seeded(tiny_seed(ctx.card.name)):
        if ctx.tiny:
            visual = TimmModel(
                "vit_tiny_patch16_224", embed_dim=32, image_size=224, pool="", proj="linear"
            )
        else:
            visual = TimmModel(
                "vit_base_patch16_224", embed_dim=512, image_size=224, pool="", proj="linear"
            )
    files = _load_visual(
        visual,
        ctx,
        "open_clip_pytorch_model.bin",
        "microsoft/BiomedCLIP-PubMedBERT_256-vit_base_patch16_224",
    )
    trunk = visual.trunk

    def pool(tokens: Any) -> Any:
        return trunk.forward_head(trunk.norm(tokens), pre_logits=True)

    return Backbone(visual, list(trunk.blocks), pool, 224, files)
