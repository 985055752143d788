"""The six general-domain families of the CRS-Bench panel (docs/protocol.md §1)."""

from __future__ import annotations

from crsbench.encoders.card import (
    CLIP_MEAN,
    CLIP_STD,
    HALF,
    IMAGENET_MEAN,
    IMAGENET_STD,
    EncoderCard,
)
from crsbench.encoders.registry import lazy, register
from crsbench.encoders.sources import HubWeights

TIMM = "crsbench.encoders.backends.timm_backend"
OCLIP = "crsbench.encoders.backends.openclip_backend"
HF = "crsbench.encoders.backends.hf_backend"
VIT_TAPS = "CLS token after the final norm of blocks [2, 5, 8, 11] (12 blocks)"
TIMM_VIT_LORA = ("blocks.*.attn.qkv", "blocks.*.attn.proj")
#: Query and value projections of transformers' Dinov2 layers: 5.x names (``attention.q_proj``),
#: then the 4.x names (``attention.attention.query``) that older releases use.
DINOV2_LORA = (
    "*.attention.q_proj",
    "*.attention.v_proj",
    "*.attention.attention.query",
    "*.attention.attention.value",
)
#: Text tower of an OpenAI / open_clip CLIP checkpoint (``visual.*`` is read); the last three are
#: the hyper-parameters OpenAI's JIT archives store as tensors.
OPENAI_TEXT = (
    "transformer.*",
    "token_embedding.*",
    "positional_embedding",
    "ln_final.*",
    "text_projection",
    "logit_scale",
    "input_resolution",
    "context_length",
    "vocab_size",
)
#: Text tower and contrastive scalars of a transformers ``SiglipModel`` checkpoint.
HF_SIGLIP_TEXT = ("text_model.*", "logit_scale", "logit_bias")
HF_ATTN_LORA = (
    "*.self_attn.q_proj",
    "*.self_attn.k_proj",
    "*.self_attn.v_proj",
    "*.self_attn.out_proj",
)

register(
    EncoderCard(
        name="resnet50",
        family="ResNet-50",
        family_group="general",
        domain=None,
        backend="timm",
        source="resnet50.tv_in1k",
        revision=None,
        licence="BSD-3-Clause",
        gated=False,
        access_note="public (torchvision IMAGENET1K_V1 weights on hub timm/resnet50.tv_in1k)",
        input_size=224,
        interpolation="bilinear",
        crop_pct=0.875,
        mean=IMAGENET_MEAN,
        std=IMAGENET_STD,
        embed_dim=2048,
        pooling="avg",
        layer_taps="global average of stages layer1..layer4 (256/512/1024/2048 channels)",
        weight_files=("model.safetensors",),
        lora_targets=("layer*.*.conv2",),
        ignore_unexpected=("fc.*",),
    ),
    lazy(TIMM, "build_resnet50"),
    HubWeights("resnet50", "timm/resnet50.tv_in1k", ("model.safetensors",)),
)

register(
    EncoderCard(
        name="vit_b16",
        family="ViT-B/16",
        family_group="general",
        domain=None,
        backend="timm",
        source="vit_base_patch16_224.augreg2_in21k_ft_in1k",
        revision=None,
        licence="Apache-2.0",
        gated=False,
        access_note="public",
        input_size=224,
        interpolation="bicubic",
        crop_pct=0.9,
        mean=HALF,
        std=HALF,
        embed_dim=768,
        pooling="cls",
        layer_taps=VIT_TAPS,
        weight_files=("model.safetensors",),
        lora_targets=TIMM_VIT_LORA,
        ignore_unexpected=("head.*",),
    ),
    lazy(TIMM, "build_vit_b16"),
    HubWeights(
        "vit_b16", "timm/vit_base_patch16_224.augreg2_in21k_ft_in1k", ("model.safetensors",)
    ),
)

register(
    EncoderCard(
        name="clip",
        family="CLIP",
        family_group="general",
        domain=None,
        backend="open_clip",
        source="ViT-B-16-quickgelu/openai (hub timm/vit_base_patch16_clip_224.openai)",
        revision=None,
        licence="MIT (OpenAI CLIP)",
        gated=False,
        access_note="public",
        input_size=224,
        interpolation="bicubic",
        crop_pct=1.0,
        mean=CLIP_MEAN,
        std=CLIP_STD,
        embed_dim=512,
        pooling="projection",
        layer_taps="CLS after ln_post of resblocks [2, 5, 8, 11] (768); 100 % = projected 512",
        weight_files=("open_clip_model.safetensors",),
        lora_targets=("transformer.resblocks.*.attn.out_proj", "transformer.resblocks.*.mlp.c_fc"),
        ignore_unexpected=OPENAI_TEXT,
        notes="QuickGELU tower (plain ViT-B-16 config would build GELU).",
    ),
    lazy(OCLIP, "build_clip"),
    HubWeights("clip", "timm/vit_base_patch16_clip_224.openai", ("open_clip_model.safetensors",)),
)

register(
    EncoderCard(
        name="siglip",
        family="SigLIP",
        family_group="general",
        domain=None,
        backend="transformers",
        crop_rounding="floor",  # transformers center_crop
        source="google/siglip-so400m-patch14-384",
        revision=None,
        licence="Apache-2.0",
        gated=False,
        access_note="public",
        input_size=384,
        interpolation="bicubic",
        resize_mode="squash",
        mean=HALF,
        std=HALF,
        embed_dim=1152,
        pooling="pooled",
        layer_taps="mean of post_layernorm tokens of layers [6, 13, 19, 26] (27 layers, no CLS); "
        "100 % = MAP-head pooler_output",
        weight_files=("model.safetensors",),
        lora_targets=HF_ATTN_LORA,
        ignore_unexpected=HF_SIGLIP_TEXT,
        notes="Same vision architecture as MedSigLIP and the MedGemma tower.",
    ),
    lazy(HF, "build_siglip"),
    HubWeights(
        "siglip",
        "google/siglip-so400m-patch14-384",
        ("config.json", "model.safetensors"),
    ),
)

register(
    EncoderCard(
        name="dinov2",
        family="DINOv2",
        family_group="general",
        domain=None,
        backend="transformers",
        crop_rounding="floor",  # transformers center_crop
        source="facebook/dinov2-base",
        revision=None,
        licence="Apache-2.0",
        gated=False,
        access_note="public",
        input_size=224,
        interpolation="bicubic",
        crop_pct=224 / 256,
        mean=IMAGENET_MEAN,
        std=IMAGENET_STD,
        embed_dim=768,
        pooling="cls",
        layer_taps="CLS after layernorm of layers [2, 5, 8, 11]",
        weight_files=("model.safetensors",),
        lora_targets=DINOV2_LORA,
    ),
    lazy(HF, "build_dinov2"),
    HubWeights(
        "dinov2",
        "facebook/dinov2-base",
        ("config.json", "model.safetensors"),
    ),
)

register(
    EncoderCard(
        name="mae",
        family="MAE",
        family_group="general",
        domain=None,
        backend="timm",
        source="vit_base_patch16_224.mae",
        revision=None,
        licence="CC-BY-NC-4.0",
        gated=False,
        access_note="public, non-commercial licence",
        input_size=224,
        interpolation="bicubic",
        crop_pct=224 / 256,
        mean=IMAGENET_MEAN,
        std=IMAGENET_STD,
        embed_dim=768,
        pooling="cls",
        layer_taps=VIT_TAPS,
        weight_files=("model.safetensors",),
        lora_targets=TIMM_VIT_LORA,
        ignore_unexpected=("head.*",),
        notes="Resize 256 → centre-crop 224, bicubic: the authors' linear-probe recipe "
        "(facebookresearch/mae main_linprobe.py transform_val), not timm's crop 0.9. "
        "MAE features are badly scaled for linear probes: standardise them (the probe does).",
    ),
    lazy(TIMM, "build_mae"),
    HubWeights("mae", "timm/vit_base_patch16_224.mae", ("model.safetensors",)),
)
