"""The nine medical families: broad medical (4) and specialists (5) of docs/protocol.md §1."""

from __future__ import annotations

from crsbench.encoders.card import (
    CLIP_MEAN,
    CLIP_STD,
    HALF,
    IMAGENET_MEAN,
    IMAGENET_STD,
    EncoderCard,
    Recipe,
)
from crsbench.encoders.families_general import (
    DINOV2_LORA,
    HF,
    HF_ATTN_LORA,
    HF_SIGLIP_TEXT,
    OCLIP,
    OPENAI_TEXT,
    TIMM,
    TIMM_VIT_LORA,
)
from crsbench.encoders.registry import lazy, register
from crsbench.encoders.sources import AllWeights, HubWeights, LocalWeights, ProjectorWeights

L24 = "[5, 11, 17, 23] (24 blocks)"


def _uint8_levels(rgb: tuple[float, float, float]) -> tuple[float, float, float]:
    """``rgb`` rounded down to 8-bit levels, in [0, 1] (LLaVA pads with its mean as uint8)."""
    r, g, b = (int(c * 255) / 255 for c in rgb)
    return r, g, b


CHEXZERO_FILE = "best_64_5e-05_original_22000_0.864.pt"
PANDERM_FILE = "panderm_ll_data6_checkpoint-499.pth"
#: Text tower and projections of a transformers ``CLIPModel`` checkpoint (the LLaVA-Med tower).
HF_CLIP_TEXT = ("text_model.*", "text_projection.*", "visual_projection.*", "logit_scale")
#: The Mistral LM of the LLaVA-Med checkpoint (only ``model.mm_projector.*`` is read).
LLAVA_LM = ("model.layers.*", "model.embed_tokens.*", "model.norm.*", "lm_head.*")
#: The Gemma LM and multimodal projector of MedGemma (only the vision tower is read), in the
#: key layouts of transformers 4.5x (``language_model.*``) and 5.x (``model.language_model.*``).
GEMMA_LM = (
    "language_model.*",
    "multi_modal_projector.*",
    "model.language_model.*",
    "model.multi_modal_projector.*",
    "lm_head.*",
)
#: Parts of PanDerm's CAE-v2 pretraining model besides its ``encoder.``: latent regressor,
#: decoder, mask token (no second encoder copy: one would be refused).
CAE_EXTRAS = (
    "regresser.*",
    "decoder.*",
    "mask_token",
    "encoder_to_regresser*",
    "rd_pos_embed",
    "head.*",
)
#: Google's serving code: [0, 1] by dtype max, zero-pad to square, SiglipImageProcessor (bicubic).
MEDSIGLIP_SERVING = Recipe(
    name="serving",
    resize_mode="pad",
    interpolation="bicubic",
    source="Google-Health/medsiglip python/serving/predictor.py, _InputImageIter._pre_process "
    "and _zero_pad_image_to_square",
)
HAI_DEF = (
    "gated: accept the Health AI Developer Foundations terms on the hub page, then "
    "`huggingface-cli login` on a machine with network"
)

register(
    EncoderCard(
        name="biomedclip",
        family="BiomedCLIP",
        family_group="medical",
        domain=None,
        backend="open_clip",
        source="microsoft/BiomedCLIP-PubMedBERT_256-vit_base_patch16_224",
        revision=None,
        licence="MIT",
        gated=False,
        access_note="public",
        input_size=224,
        interpolation="bicubic",
        crop_pct=1.0,
        mean=CLIP_MEAN,
        std=CLIP_STD,
        embed_dim=512,
        pooling="projection",
        layer_taps="CLS after the trunk norm of blocks [2, 5, 8, 11] (768); 100 % = projected 512",
        weight_files=("open_clip_pytorch_model.bin",),
        lora_targets=tuple(f"trunk.{p}" for p in TIMM_VIT_LORA),
        ignore_unexpected=("text.*", "logit_scale", "logit_bias"),
        notes="Vision tower only (open_clip TimmModel); the PubMedBERT text tower is never built.",
    ),
    lazy(OCLIP, "build_biomedclip"),
    HubWeights(
        "biomedclip",
        "microsoft/BiomedCLIP-PubMedBERT_256-vit_base_patch16_224",
        ("open_clip_pytorch_model.bin",),
    ),
)

register(
    EncoderCard(
        name="llava_med",
        family="LLaVA-Med vision tower",
        family_group="medical",
        domain=None,
        backend="transformers",
        crop_rounding="floor",  # transformers center_crop
        source="microsoft/llava-med-v1.5-mistral-7b (mm_projector) + openai/clip-vit-large-patch14-336",
        revision=None,
        licence="research, non-commercial (LLaVA-Med README)",
        gated=False,
        access_note="public; only the shard holding model.mm_projector.* is read, never the LM",
        input_size=336,
        interpolation="bicubic",
        resize_mode="pad",
        crop_pct=1.0,
        pad_fill=_uint8_levels(CLIP_MEAN),
        grey_pad_fill=(114 / 255,) * 3,
        mean=CLIP_MEAN,
        std=CLIP_STD,
        embed_dim=4096,
        pooling="avg",
        layer_taps=f"CLS after post_layernorm of layers {L24} (1024); 100 % = mean of "
        "mm_projector(patch tokens of layer -2) (4096)",
        lora_targets=HF_ATTN_LORA,
        ignore_unexpected=(*HF_CLIP_TEXT, *LLAVA_LM),
        notes="Pad to square with the CLIP mean colour, grey images with grey 114 "
        "(LLaVA-Med llava/mm_utils.py process_images/expand2square); centred, without "
        "upstream's random +1 px offset.",
    ),
    lazy(HF, "build_llava_med"),
    AllWeights(
        (
            HubWeights("llava_med", "openai/clip-vit-large-patch14-336", ("config.json",)),
            ProjectorWeights("llava_med"),
        )
    ),
)

register(
    EncoderCard(
        name="medsiglip",
        family="MedSigLIP",
        family_group="medical",
        domain=None,
        backend="transformers",
        crop_rounding="floor",  # transformers center_crop
        source="google/medsiglip-448",
        revision=None,
        licence="Health AI Developer Foundations terms",
        gated=True,
        access_note=HAI_DEF,
        input_size=448,
        interpolation="bilinear",
        resize_mode="squash",
        antialias=False,
        requantise=True,
        recipe="model_card",
        recipes=(MEDSIGLIP_SERVING,),
        mean=HALF,
        std=HALF,
        embed_dim=1152,
        pooling="pooled",
        layer_taps="mean of post_layernorm tokens of layers [6, 13, 19, 26]; 100 % = pooler_output "
        "(not L2-normalised; the serving code's image_embeds = pooler_output / its L2 norm)",
        weight_files=("model.safetensors",),
        lora_targets=HF_ATTN_LORA,
        ignore_unexpected=HF_SIGLIP_TEXT,
        notes="Default recipe 'model_card': squash to 448 with tf.image.resize bilinear, no "
        "antialias, truncated to 8 bits (medsiglip notebooks/quick_start_with_hugging_face.ipynb, "
        "'to reproduce the results from MedSigLIP evals'); recipe 'serving' zero-pads instead.",
    ),
    lazy(HF, "build_medsiglip"),
    HubWeights(
        "medsiglip",
        "google/medsiglip-448",
        ("config.json", "model.safetensors"),
    ),
)

register(
    EncoderCard(
        name="medgemma",
        family="MedGemma vision encoder",
        family_group="medical",
        domain=None,
        backend="transformers",
        crop_rounding="floor",  # transformers center_crop
        source="google/medgemma-4b-it",
        revision=None,
        licence="Health AI Developer Foundations terms",
        gated=True,
        access_note=HAI_DEF,
        input_size=896,
        interpolation="bilinear",
        resize_mode="squash",
        mean=HALF,
        std=HALF,
        embed_dim=1152,
        pooling="avg",
        layer_taps="mean of post_layernorm tokens of layers [6, 13, 19, 26]; 100 % = mean of "
        "last_hidden_state",
        weight_files=("model.safetensors.index.json",),
        lora_targets=HF_ATTN_LORA,
        allow_missing=("head.*",),
        ignore_unexpected=GEMMA_LM,
        notes="Only vision_tower.* tensors are read from the shards; the Gemma LM is never built.",
    ),
    lazy(HF, "build_medgemma"),
    HubWeights(
        "medgemma",
        "google/medgemma-4b-it",
        ("config.json", "model.safetensors.index.json"),
    ),
)

register(
    EncoderCard(
        name="panderm",
        family="PanDerm",
        family_group="specialist",
        domain="dermoscopy",
        backend="checkpoint",
        source=PANDERM_FILE,
        revision=None,
        licence="CC-BY-NC-ND-4.0 (PanDerm README)",
        gated=False,
        access_note="Google Drive link in the PanDerm README; place the file in "
        "$CRSBENCH_WEIGHTS_DIR/panderm/",
        input_size=224,
        interpolation="bilinear",
        crop_pct=224 / 256,
        mean=IMAGENET_MEAN,
        std=(0.228, 0.224, 0.225),
        embed_dim=1024,
        pooling="cls",
        layer_taps=f"CLS after the final norm of blocks {L24}",
        weight_files=(PANDERM_FILE,),
        lora_targets=TIMM_VIT_LORA,
        ignore_unexpected=CAE_EXTRAS,
        notes="timm Beit with absolute pos-emb, no rel-pos bias, LayerScale 0.1; std 0.228 is "
        "PanDerm's own constant.",
    ),
    lazy(TIMM, "build_panderm"),
    LocalWeights("panderm", (PANDERM_FILE,)),
)

register(
    EncoderCard(
        name="retfound",
        family="RETFound",
        family_group="specialist",
        domain="fundus",
        backend="checkpoint",
        source="YukunZhou/RETFound_mae_natureCFP:RETFound_mae_natureCFP.pth",
        revision=None,
        licence="CC-BY-NC-4.0",
        gated=True,
        access_note="gated on the hub: agree to share contact information",
        input_size=224,
        interpolation="bicubic",
        crop_pct=224 / 256,
        mean=IMAGENET_MEAN,
        std=IMAGENET_STD,
        embed_dim=1024,
        pooling="avg",
        layer_taps=f"mean patch token → fc_norm of blocks {L24} (official global_pool=True)",
        weight_files=("RETFound_mae_natureCFP.pth",),
        lora_targets=TIMM_VIT_LORA,
        allow_missing=("fc_norm.*",),
        ignore_unexpected=("norm.*", "mask_token", "decoder*", "head.*"),
    ),
    lazy(TIMM, "build_retfound"),
    HubWeights("retfound", "YukunZhou/RETFound_mae_natureCFP", ("RETFound_mae_natureCFP.pth",)),
)

register(
    EncoderCard(
        name="rad_dino",
        family="RAD-DINO",
        family_group="specialist",
        domain="chest_xray",
        backend="transformers",
        crop_rounding="floor",  # transformers center_crop
        source="microsoft/rad-dino",
        revision=None,
        licence="MIT",
        gated=False,
        access_note="public",
        input_size=518,
        interpolation="bicubic",
        crop_pct=1.0,
        mean=(0.5307, 0.5307, 0.5307),
        std=(0.2583, 0.2583, 0.2583),
        embed_dim=768,
        pooling="cls",
        layer_taps="CLS after layernorm of layers [2, 5, 8, 11]",
        weight_files=("model.safetensors",),
        lora_targets=DINOV2_LORA,
        notes="mean/std from the MAIRA-2 processor copy; check preprocessor_config.json.",
    ),
    lazy(HF, "build_rad_dino"),
    HubWeights(
        "rad_dino",
        "microsoft/rad-dino",
        ("config.json", "model.safetensors"),
    ),
)

register(
    EncoderCard(
        name="biovil",
        family="BioViL",
        family_group="specialist",
        domain="chest_xray",
        backend="checkpoint",
        source="microsoft/BiomedVLP-CXR-BERT-specialized:biovil_image_resnet50_proj_size_128.pt",
        revision="v1.1",
        licence="MIT",
        gated=False,
        access_note="public",
        input_size=480,
        interpolation="bilinear",
        crop_pct=480 / 512,
        mean=(0.0, 0.0, 0.0),
        std=(1.0, 1.0, 1.0),
        intensity="minmax",
        luma=True,
        grayscale="stretch each image min-max to 0..255 (truncated), convert to grey 'L', "
        "replicate to 3 channels",
        weights_md5="02ce6ee460f72efd599295f440dbb453",
        embed_dim=2048,
        pooling="avg",
        layer_taps="global average of stages layer1..layer4 (256/512/1024/2048 channels)",
        weight_files=("biovil_image_resnet50_proj_size_128.pt",),
        lora_targets=("layer*.*.conv2",),
        ignore_unexpected=("encoder.encoder.fc.*", "projector.*"),
        notes="hi-ml load_image (remap_to_uint8, convert('L')), then Resize 512 → crop 480, "
        "[0, 1] range, no mean/std (create_chest_xray_transform_for_inference).",
    ),
    lazy(TIMM, "build_biovil"),
    HubWeights(
        "biovil",
        "microsoft/BiomedVLP-CXR-BERT-specialized",
        ("biovil_image_resnet50_proj_size_128.pt",),
        revision="v1.1",
    ),
)

register(
    EncoderCard(
        name="chexzero",
        family="CheXzero",
        family_group="specialist",
        domain="chest_xray",
        backend="checkpoint",
        source=CHEXZERO_FILE,
        revision=None,
        licence="MIT",
        gated=False,
        access_note="Google Drive folder in the CheXzero README; place the file in "
        "$CRSBENCH_WEIGHTS_DIR/chexzero/",
        input_size=224,
        interpolation="bicubic",
        resize_mode="pad",
        crop_pct=1.0,
        mean=(101.48761 / 255,) * 3,
        std=(83.43944 / 255,) * 3,
        luma=True,
        grayscale="colour images to grey 'L' (CheXzero pastes them into an 'L' canvas), "
        "replicate to 3 channels",
        embed_dim=512,
        pooling="projection",
        layer_taps="CLS after ln_post of resblocks [2, 5, 8, 11] (768); 100 % = projected 512",
        weight_files=(CHEXZERO_FILE,),
        lora_targets=("transformer.resblocks.*.attn.out_proj", "transformer.resblocks.*.mlp.c_fc"),
        ignore_unexpected=OPENAI_TEXT,
        notes="Letterbox on black (data_process.py preprocess: 'L' canvas, zero padding), "
        "normalise with CheXzero's 0-255 constants, bicubic to 224 (zero_shot.py make); the "
        "320-px canvas is folded into one resize; single checkpoint (the paper's ensemble is "
        "not reproduced).",
    ),
    lazy(OCLIP, "build_chexzero"),
    LocalWeights("chexzero", (CHEXZERO_FILE,)),
)
