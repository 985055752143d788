"""timm backend: ResNet-50, ViT-B/16, MAE, RETFound (ViT-L), PanDerm (Beit), BioViL (ResNet-50).

Models are always created with ``pretrained=False`` and weights are loaded by crsbench itself
(safetensors or ``torch.load(weights_only=True)``), so every file goes through the same
lookup, sha256 check and strict key check.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from crsbench.encoders.backends.common import gap, load_checked, seeded, tiny_seed
from crsbench.encoders.base import Backbone, BuildContext
from crsbench.encoders.weights import find_file, load_state_dict, verify_sha256

TINY_VIT: dict[str, Any] = {"depth": 4, "embed_dim": 64, "num_heads": 2}
KeyMap = Callable[[Mapping[str, Any]], Mapping[str, Any]]


def vit_backbone(model: Any, input_size: int, files: tuple = ()) -> Backbone:
    """timm ViT/Beit: taps = blocks; tap pooling = the model's own head pooling after norm."""

    def pool(tokens: Any) -> Any:
        return model.forward_head(model.norm(tokens), pre_logits=True)

    return Backbone(model, list(model.blocks), pool, input_size, files)


def resnet_backbone(model: Any, input_size: int, files: tuple = ()) -> Backbone:
    """timm ResNet: taps = the four stages, globally average pooled."""
    stages = [model.layer1, model.layer2, model.layer3, model.layer4]
    return Backbone(model, stages, gap, input_size, files)


def create(name: str, ctx: BuildContext, real: dict[str, Any], tiny: dict[str, Any]) -> Any:
    """``timm.create_model(name, pretrained=False, num_classes=0, ...)``; deterministic init."""
    import timm

    kwargs = {"num_classes": 0, **(tiny if ctx.tiny else real)}
    with seeded(tiny_seed(ctx.card.name)):
        return timm.create_model(name, pretrained=False, **kwargs)


def locate(ctx: BuildContext, filename: str, repo_id: str | None, hint: str = "") -> Path | None:
    """Find the weight file before any model is built (a missing file fails fast)."""
    if not ctx.load_weights:
        return None
    card = ctx.card
    return find_file(
        card.name,
        filename,
        weights_path=ctx.weights_path,
        repo_id=repo_id,
        revision=card.revision,
        hint=hint,
    )


def load_into(
    model: Any,
    ctx: BuildContext,
    path: Path | None,
    *,
    key_map: KeyMap | None = None,
    prefix: str | Callable[[Mapping[str, Any]], str] = "",
) -> tuple:
    """Verify, load and key-check one weight file (from :func:`locate`); ``(path,)`` or ``()``.

    ``key_map`` unwraps the checkpoint (e.g. its ``model`` entry); ``prefix`` (or a function of
    the unwrapped checkpoint giving it) selects the keys the model reads; the card's
    allow-lists decide which other keys may be missing or ignored.
    """
    if path is None:
        return ()
    if not ctx.tiny:
        verify_sha256(path, ctx.card.weights_sha256)
    sd: Mapping[str, Any] = load_state_dict(path)
    if key_map is not None:
        sd = key_map(sd)
    load_checked(
        model,
        sd,
        name=ctx.card.name,
        source=str(path),
        prefix=prefix(sd) if callable(prefix) else prefix,
        allow_missing=ctx.card.allow_missing,
        ignore_unexpected=ctx.card.ignore_unexpected,
    )
    return (path,)


def build_resnet50(ctx: BuildContext) -> Backbone:
    """ResNet-50 (torchvision V1 weights via timm ``resnet50.tv_in1k``)."""
    path = locate(ctx, "model.safetensors", "timm/resnet50.tv_in1k")
    model = create("resnet50.tv_in1k", ctx, {}, {"layers": [1, 1, 1, 1]})
    files = load_into(model, ctx, path)
    return resnet_backbone(model, 32 if ctx.tiny else ctx.card.input_size, files)


def _timm_vit(ctx: BuildContext, timm_name: str, hub: str) -> Backbone:
    path = locate(ctx, "model.safetensors", hub)
    size = 32 if ctx.tiny else ctx.card.input_size
    model = create(timm_name, ctx, {}, {**TINY_VIT, "img_size": size})
    files = load_into(model, ctx, path)
    return vit_backbone(model, size, files)


def build_vit_b16(ctx: BuildContext) -> Backbone:
    """ViT-B/16 (timm ``vit_base_patch16_224.augreg2_in21k_ft_in1k``), CLS after final norm."""
    name = "vit_base_patch16_224.augreg2_in21k_ft_in1k"
    return _timm_vit(ctx, name, f"timm/{name}")


def build_mae(ctx: BuildContext) -> Backbone:
    """MAE ViT-B/16 encoder (timm ``vit_base_patch16_224.mae``), CLS after final norm."""
    return _timm_vit(ctx, "vit_base_patch16_224.mae", "timm/vit_base_patch16_224.mae")


def build_retfound(ctx: BuildContext) -> Backbone:
    """RETFound-MAE (ViT-L/16): mean patch token → fc_norm, as the official ``global_pool=True``.

    The MAE checkpoint (``ckpt["model"]``) has no ``fc_norm`` (it stays at its identity init,
    exactly as in RETFound's code) and carries the MAE decoder, which is ignored (card
    allow-lists).
    """
    path = locate(
        ctx,
        "RETFound_mae_natureCFP.pth",
        "YukunZhou/RETFound_mae_natureCFP",
        "RETFound is gated on the hub: accept its terms (contact sharing) first.",
    )
    from crsbench.encoders.backends.common import unwrap

    size = 32 if ctx.tiny else ctx.card.input_size
    model = create(
        "vit_large_patch16_224",
        ctx,
        {"global_pool": "avg"},
        {**TINY_VIT, "img_size": size, "global_pool": "avg"},
    )
    files = load_into(model, ctx, path, key_map=unwrap)
    return vit_backbone(model, size, files)


def panderm_prefix(sd: Mapping[str, Any]) -> str:
    """``"encoder."`` when the PanDerm checkpoint holds the CAE layout, else ``""`` (timm keys).

    The authors load ``ckpt["model"]`` with ``encoder.`` removed (``LP_Eval/models/builder.py``);
    every other key must be one the card names as ignorable.
    """
    return "encoder." if any(k.startswith("encoder.") for k in sd) else ""


def build_panderm(ctx: BuildContext) -> Backbone:
    """PanDerm ViT-L/16 as ``timm.models.beit.Beit`` (abs pos-emb, LayerScale 0.1), CLS."""
    path = locate(
        ctx,
        "panderm_ll_data6_checkpoint-499.pth",
        None,
        "PanDerm weights are on Google Drive only (github.com/SiyuanYan1/PanDerm README).",
    )
    from functools import partial

    import torch.nn as nn
    from timm.models.beit import Beit

    size = 32 if ctx.tiny else ctx.card.input_size
    dims: dict[str, Any] = (
        {"embed_dim": 64, "depth": 4, "num_heads": 2}
        if ctx.tiny
        else {"embed_dim": 1024, "depth": 24, "num_heads": 16}
    )
    with seeded(tiny_seed(ctx.card.name)):
        model = Beit(
            img_size=size,
            patch_size=16,
            mlp_ratio=4,
            qkv_bias=True,
            # timm annotates norm_layer as a class but calls it (its own models pass partials)
            norm_layer=partial(nn.LayerNorm, eps=1e-6),  # type: ignore[arg-type]
            num_classes=0,
            global_pool="token",
            use_abs_pos_emb=True,
            use_rel_pos_bias=False,
            use_shared_rel_pos_bias=False,
            init_values=0.1,
            **dims,
        )
    from crsbench.encoders.backends.common import unwrap

    files = load_into(model, ctx, path, key_map=unwrap, prefix=panderm_prefix)
    return vit_backbone(model, size, files)


def build_biovil(ctx: BuildContext) -> Backbone:
    """BioViL image encoder: ResNet-50 trunk, GAP(layer4) 2048-d (projector not used)."""
    path = locate(
        ctx, "biovil_image_resnet50_proj_size_128.pt", "microsoft/BiomedVLP-CXR-BERT-specialized"
    )
    model = create("resnet50", ctx, {}, {"layers": [1, 1, 1, 1]})
    from crsbench.encoders.backends.common import unwrap

    files = load_into(model, ctx, path, key_map=unwrap, prefix="encoder.encoder.")
    return resnet_backbone(model, 32 if ctx.tiny else ctx.card.input_size, files)
