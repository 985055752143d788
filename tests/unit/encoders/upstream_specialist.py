"""Upstream pipelines of CheXzero, PanDerm, BioViL and LLaVA-Med, built the authors' way.

Each ``*_upstream(folder, true)`` writes a random model in the authors' file layout under
``folder`` and returns ``(weights_path, upstream, (h, w))``: what crsbench's ``build`` gets, the
authors' pipeline (image -> the feature they use), and an image size at which the authors'
first resize is the identity. ``true=False`` is crsbench's tiny size, ``true=True`` the real
architecture. Citations are to the authors' repositories at the commits read:

* CheXzero: rajpurkarlab/CheXzero @ 5c341db (``data_process.py``, ``zero_shot.py``,
  ``clip.py``, ``model.py``);
* PanDerm: SiyuanYan1/PanDerm @ 97e09d0 (``classification/models/builder.py``,
  ``classification/models/modeling_finetune.py``, ``classification/run_class_finetuning.py``);
* BioViL: microsoft/hi-ml @ b67c1d2, ``hi-ml-multimodal/src/health_multimodal/image/``
  (``data/io.py``, ``data/transforms.py``, ``model/model.py``, ``model/encoder.py``,
  ``model/resnet.py``), or the PyPI package ``hi-ml-multimodal`` itself when installed;
* LLaVA-Med: microsoft/LLaVA-Med @ d406e3f (``llava/mm_utils.py``,
  ``llava/model/multimodal_encoder/clip_encoder.py``,
  ``llava/model/multimodal_projector/builder.py``).
"""

from __future__ import annotations

import importlib.util
import json
import math
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from encoder_images import perturb
from PIL import Image
from torch import nn

Upstream = Callable[[Image.Image], torch.Tensor]
Built = tuple[Path, Upstream, tuple[int, int]]
HAVE_HIML = importlib.util.find_spec("health_multimodal") is not None


# --- CheXzero -------------------------------------------------------------------------------
def chexzero_upstream(folder: Path, true: bool) -> Built:
    """CheXzero. Model: an OpenAI-layout CLIP state dict (``torch.save(model.state_dict())``)
    read by OpenAI's ``build_model`` (CheXzero ``model.py`` 419-456, via ``clip.load(...,
    jit=False)``, ``clip.py`` 98-139, ``model.float()`` on CPU), here open_clip's port of it,
    ``build_model_from_openai_state_dict`` (heads = width // 64, QuickGELU), then
    ``load_clip`` (``zero_shot.py`` 65-94) loads the file into it. Pixels:
    ``data_process.py`` ``preprocess`` 31-41 (PIL resize to fit the 320 canvas, paste into an
    'L' canvas: luma for colour, zero padding), ``zero_shot.py`` ``CXRTestDataset`` 49-57
    (float, 3 channels) and ``make`` 377-386 (Normalize(101.48761, 83.43944), Resize(224,
    bicubic)). Feature: ``model.encode_image`` (``zero_shot.py`` 152; the zero-shot code then
    divides it by its norm, 153). Tiny: canvas 80 -> 64 (real: 320 -> 224)."""
    from open_clip.model import (
        CLIP,
        CLIPTextCfg,
        CLIPVisionCfg,
        build_model_from_openai_state_dict,
    )
    from torchvision.transforms import Compose, InterpolationMode, Normalize, Resize

    width, layers, embed, size, canvas = (768, 12, 512, 224, 320) if true else (64, 4, 32, 64, 80)
    vision = CLIPVisionCfg(
        layers=layers, width=width, head_width=64, patch_size=32, image_size=size
    )
    text = CLIPTextCfg(context_length=8, vocab_size=50, width=64, heads=1, layers=1)
    src = CLIP(embed, vision, text, quick_gelu=True)
    perturb(src)
    folder.mkdir(parents=True)
    torch.save(src.state_dict(), folder / "chexzero.pt")
    sd = torch.load(folder / "chexzero.pt", weights_only=True)
    # clip.load(..., jit=False) on the CPU: build_model (fp16 weights), then .float(); CheXzero's
    # load_clip (zero_shot.py 88-90) then loads its own file into that fp32 model
    arch = build_model_from_openai_state_dict(dict(sd), quick_gelu=True, cast_dtype=torch.float32)
    model = arch.float()
    model.load_state_dict(sd)
    model.eval()
    transform = Compose(
        [
            Normalize((101.48761,) * 3, (83.43944,) * 3),
            Resize(size, interpolation=InterpolationMode.BICUBIC),
        ]
    )

    def upstream(image: Image.Image) -> torch.Tensor:
        ratio = float(canvas) / max(image.size)
        new_size = tuple(int(x * ratio) for x in image.size)
        img = image.resize(new_size, Image.Resampling.LANCZOS)
        new_img = Image.new("L", (canvas, canvas))
        new_img.paste(img, ((canvas - new_size[0]) // 2, (canvas - new_size[1]) // 2))
        x = np.asarray(new_img, dtype=np.float32)  # the h5 dataset is float
        x = torch.from_numpy(np.repeat(x[None], 3, axis=0))
        return model.encode_image(transform(x).unsqueeze(0))

    return folder / "chexzero.pt", upstream, (canvas - 24, canvas)


# --- PanDerm --------------------------------------------------------------------------------
class _PanDermBlock(nn.Module):
    """``modeling_finetune.py`` ``Block`` 263-292 with ``Attention`` 116-199 (qkv without bias,
    ``q_bias`` / ``v_bias``, k bias zero) and ``Mlp`` 97-113; LayerScale ``gamma_1/2``."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(dim, eps=1e-6), nn.LayerNorm(dim, eps=1e-6)
        self.attn = nn.Module()
        self.attn.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.attn.q_bias = nn.Parameter(torch.zeros(dim))
        self.attn.v_bias = nn.Parameter(torch.zeros(dim))
        self.attn.proj = nn.Linear(dim, dim)
        self.mlp = nn.Module()
        self.mlp.fc1, self.mlp.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.gamma_1 = nn.Parameter(0.1 * torch.ones(dim))
        self.gamma_2 = nn.Parameter(0.1 * torch.ones(dim))

    def _attn(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        a = self.attn
        bias = torch.cat((a.q_bias, torch.zeros_like(a.v_bias), a.v_bias))
        qkv = nn.functional.linear(x, a.qkv.weight, bias)
        q, k, v = qkv.reshape(b, n, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        q = q * q.shape[-1] ** -0.5
        attn = (q @ k.transpose(-2, -1)).softmax(dim=-1)
        return a.proj((attn @ v).transpose(1, 2).reshape(b, n, -1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.gamma_1 * self._attn(self.norm1(x))
        h = self.mlp.fc2(nn.functional.gelu(self.mlp.fc1(self.norm2(x))))
        return x + self.gamma_2 * h


class PanDermViT(nn.Module):
    """``modeling_finetune.py`` ``VisionTransformer`` 381-532 as ``panderm_large_patch16_224``
    (535-540) builds it for linear probing: abs sin-cos ``pos_embed`` (447-463, a parameter),
    ``lin_probe=True, linear_type='standard'``: ``forward_features`` 496-516 returns the CLS
    token after ``norm``."""

    def __init__(self, dim: int, depth: int, heads: int, size: int) -> None:
        super().__init__()
        self.patch_embed = nn.Module()
        self.patch_embed.proj = nn.Conv2d(3, dim, kernel_size=16, stride=16)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, (size // 16) ** 2 + 1, dim))
        self.blocks = nn.ModuleList(_PanDermBlock(dim, heads) for _ in range(depth))
        self.norm = nn.LayerNorm(dim, eps=1e-6)

    def forward_features(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed.proj(x).flatten(2).transpose(1, 2)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
        x = x + self.pos_embed.expand(x.shape[0], -1, -1)
        for blk in self.blocks:
            x = blk(x)
        return self.norm(x)[:, 0]


def panderm_upstream(folder: Path, true: bool) -> Built:
    """PanDerm. File: the CAE-v2 pretraining state dict, flat, encoder under ``encoder.``
    (read flat by ``builder.py`` 67-71 and ``run_class_finetuning.py`` 446-470, which keep
    ``encoder.*`` with the prefix removed). Pixels: ``builder.py`` ``get_eval_transforms``
    24-45 (Resize(256) bilinear, CenterCrop(224), ToTensor, Normalize(ImageNet mean, std
    (0.228, 0.224, 0.225)) of ``get_norm_constants`` 13-22), ``convert('RGB')`` images.
    Tiny: 64 wide, 4 blocks, 32 px (36 -> 32)."""
    from torchvision import transforms as T

    dim, depth, heads, size = (1024, 24, 16, 224) if true else (64, 4, 2, 32)
    src = PanDermViT(dim, depth, heads, size)
    perturb(src)
    sd = {f"encoder.{k}": v for k, v in src.state_dict().items()}
    sd.update({"mask_token": torch.zeros(1, 1, dim), "decoder.norm.weight": torch.ones(dim)})
    sd["regresser.blocks.0.norm1.weight"] = torch.ones(dim)
    folder.mkdir(parents=True)
    torch.save(sd, folder / "panderm.pth")
    ckpt = torch.load(folder / "panderm.pth", weights_only=True)
    enc_sd = {k.replace("encoder.", ""): v for k, v in ckpt.items() if k.startswith("encoder.")}
    model = PanDermViT(dim, depth, heads, size)
    model.load_state_dict(enc_sd)  # strict here; the authors' strict=False loads the same keys
    model.eval()
    scale = math.floor(size / (224 / 256))
    transform = T.Compose(
        [
            T.Resize(scale),
            T.CenterCrop(size),
            T.ToTensor(),
            T.Normalize(mean=(0.485, 0.456, 0.406), std=(0.228, 0.224, 0.225)),
        ]
    )

    def upstream(image: Image.Image) -> torch.Tensor:
        return model.forward_features(transform(image.convert("RGB")).unsqueeze(0))

    return folder / "panderm.pth", upstream, (scale, scale + 19)


# --- BioViL ---------------------------------------------------------------------------------
def himl_remap_to_uint8(array: np.ndarray) -> np.ndarray:
    """hi-ml ``data/io.py`` ``remap_to_uint8`` 16-43 (``percentiles=None``)."""
    array = array.astype(float)
    array -= array.min()
    array /= array.max()
    array *= 255
    return array.astype(np.uint8)


def _himl_pieces(true: bool) -> tuple[nn.Module, Callable[[np.ndarray], Image.Image], Callable]:
    """``(ImageModel, load_image, create_chest_xray_transform_for_inference)``: hi-ml's own
    when ``hi-ml-multimodal`` is installed, else the minimal re-implementation: the model is
    torchvision's ResNet-50 (``model/resnet.py`` ``ResNetHIML`` 17-50 subclasses it and returns
    layer4) pooled as ``model/encoder.py`` ``ImageEncoder.forward`` 49-57, in an ``ImageModel``
    whose keys are ``encoder.encoder.*`` and ``projector.*`` (``model/model.py`` 34-75)."""
    from torchvision import transforms as T
    from torchvision.models.resnet import Bottleneck, ResNet

    layers = [3, 4, 6, 3] if true else [1, 1, 1, 1]
    if HAVE_HIML:
        from health_multimodal.image.data.transforms import (
            create_chest_xray_transform_for_inference,
        )
        from health_multimodal.image.model.model import ImageModel
        from health_multimodal.image.model.resnet import _resnet

        model = ImageModel(img_encoder_type="resnet50", joint_feature_size=128)
        if not true:
            model.encoder.encoder = _resnet(None, Bottleneck, layers, False, False)

        def load(a: np.ndarray) -> Image.Image:
            from health_multimodal.image.data.io import load_image

            with tempfile.TemporaryDirectory() as tmp:  # load_image reads a file (skimage io)
                path = Path(tmp) / "image.png"
                Image.fromarray(a).save(path)
                return load_image(path)

        return model, load, create_chest_xray_transform_for_inference

    class _Encoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = ResNet(Bottleneck, layers)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            e = self.encoder
            x = e.maxpool(e.relu(e.bn1(e.conv1(x))))
            x = e.layer4(e.layer3(e.layer2(e.layer1(x))))
            return torch.flatten(nn.functional.adaptive_avg_pool2d(x, (1, 1)), 1)

    class _ImageModel(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = _Encoder()
            self.projector = nn.Conv2d(2048, 128, 1)  # a stand-in: never used for the feature

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.encoder(x)

    def load(a: np.ndarray) -> Image.Image:  # io.py load_image 46-68 for PNG files
        return Image.fromarray(himl_remap_to_uint8(a)).convert("L")

    def transform(resize: int, center_crop_size: int) -> Callable:  # transforms.py 28-38
        def expand(x: torch.Tensor) -> torch.Tensor:  # ExpandChannels 12-25
            return torch.repeat_interleave(x, 3, dim=0)

        return T.Compose([T.Resize(resize), T.CenterCrop(center_crop_size), T.ToTensor(), expand])

    return _ImageModel(), load, transform


def biovil_upstream(folder: Path, true: bool) -> Built:
    """BioViL. File: the whole ``ImageModel`` state dict as ``.pt`` (``model.py`` 66-67 loads
    it strictly). Pixels: ``load_image`` (min-max stretch to 0..255 truncated, 'L'), then
    ``create_chest_xray_transform_for_inference(512, 480)`` (tiny: 34, 32). Feature: the
    pooled 2048-d ``img_embedding`` (``model.py`` 77-90), the projector is not used."""
    model, load, make_transform = _himl_pieces(true)
    perturb(model)
    folder.mkdir(parents=True)
    torch.save(model.state_dict(), folder / "biovil.pt")
    model.load_state_dict(torch.load(folder / "biovil.pt", weights_only=True))
    model.eval()
    resize, crop = (512, 480) if true else (34, 32)
    transform = make_transform(resize, crop)

    def upstream(a: np.ndarray) -> torch.Tensor:  # type: ignore[override]
        x = transform(load(a)).unsqueeze(0)
        out = model(x)
        return out.img_embedding if HAVE_HIML else out

    return folder / "biovil.pt", upstream, (resize, resize + 19)  # type: ignore[return-value]


# --- LLaVA-Med ------------------------------------------------------------------------------
def llava_med_upstream(folder: Path, true: bool) -> Built:
    """LLaVA-Med v1.5. Files: the CLIP tower as a transformers hub folder (``vision_tower/``,
    with its ``preprocessor_config.json``), the LLaVA-Med folder with ``config.json``, the
    shard index and the shard holding ``model.mm_projector.{0,2}.*``. Pixels:
    ``mm_utils.py`` ``process_images`` 32-45 ('pad': background ``int(255 * mean)`` per
    channel, 'L' images ``int(255 * sum(mean) / 3)`` = 114) and ``expand2square`` 14-29 (the
    offset is ``random.randint(m // 2, m // 2 + 1)``: the lower one here, see the test), then
    ``CLIPImageProcessor`` (``clip_encoder.py`` 23). Feature: ``hidden_states[-2][:, 1:]``
    (``clip_encoder.py`` 29-34, ``mm_vision_select_layer=-2``, 'patch'), through the
    ``mlp2x_gelu`` projector (``multimodal_projector/builder.py`` 39-46); crsbench's embedding
    is the mean over those tokens (the LM consumes them one by one: the mean is ours)."""
    from safetensors.torch import save_file
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPVisionModel

    from crsbench.encoders.backends import hf_backend

    vision = hf_backend.CLIP_L336 if true else hf_backend.TINY
    hidden = 4096 if true else 32
    text = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1}
    cfg = CLIPConfig(
        vision_config=vision, text_config={**text, "num_attention_heads": 2, "vocab_size": 50}
    )
    src = CLIPModel(cfg)
    perturb(src)
    src.save_pretrained(folder / "vision_tower")
    side = vision["image_size"]
    CLIPImageProcessor(size={"shortest_edge": side}, crop_size=side).save_pretrained(
        folder / "vision_tower"
    )
    mm = vision["hidden_size"]
    projector = nn.Sequential(nn.Linear(mm, hidden), nn.GELU(), nn.Linear(hidden, hidden))
    # at 4096 wide, the default 0.05 would make features of ~300, whose float32 rounding alone
    # exceeds 1e-4: perturb on the scale of the init (1 / sqrt(fan_in))
    perturb(projector, scale=0.2 / math.sqrt(hidden))
    shard = {f"model.mm_projector.{k}": v.contiguous() for k, v in projector.state_dict().items()}
    save_file(shard, folder / "model-00002-of-00002.safetensors", metadata={"format": "pt"})
    lm = {"model.embed_tokens.weight": torch.zeros(4, 4)}
    save_file(lm, folder / "model-00001-of-00002.safetensors", metadata={"format": "pt"})
    weight_map = dict.fromkeys(shard, "model-00002-of-00002.safetensors")
    weight_map["model.embed_tokens.weight"] = "model-00001-of-00002.safetensors"
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    llava_cfg = {"mm_projector_type": "mlp2x_gelu", "mm_vision_select_layer": -2}
    (folder / "config.json").write_text(json.dumps({**llava_cfg, "image_aspect_ratio": "pad"}))

    tower = CLIPVisionModel.from_pretrained(folder / "vision_tower").eval()
    proc = CLIPImageProcessor.from_pretrained(folder / "vision_tower")
    projector.eval()

    def upstream(image: Image.Image) -> torch.Tensor:
        mean = proc.image_mean
        if image.mode == "L":
            background: int | tuple[int, ...] = int(255 * sum(mean) / len(mean))
        else:
            background = tuple(int(x * 255) for x in mean)
        w, h = image.size
        square = Image.new(image.mode, (max(w, h),) * 2, background)
        square.paste(image, ((max(w, h) - w) // 2, (max(w, h) - h) // 2))
        x = proc.preprocess(square, return_tensors="pt")["pixel_values"]
        out = tower(x, output_hidden_states=True)
        return projector(out.hidden_states[-2][:, 1:]).mean(dim=1)

    return folder, upstream, (side - 20, side)
