"""transformers backend, vision towers only: SigLIP, DINOv2, RAD-DINO, MedSigLIP, MedGemma,
LLaVA-Med (CLIP-L/14-336 tower + mm_projector).

Language models are never instantiated: SigLIP/MedSigLIP load through ``SiglipVisionModel``
(text weights in the file are skipped), MedGemma reads only ``vision_tower.*`` tensors from its
shards, and LLaVA-Med reads only ``model.mm_projector.*`` from the shard that holds them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from torch import nn

from crsbench.core.errors import EncoderError
from crsbench.encoders.backends.common import load_checked, seeded, tiny_seed
from crsbench.encoders.base import Backbone, BuildContext
from crsbench.encoders.weights import (
    WEIGHTS_ENV,
    hub_offline,
    missing_weights_error,
    weights_dir,
)

TINY = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 4,
    "num_attention_heads": 2,
    "image_size": 56,
    "patch_size": 14,
}
HF_FILES = ["config.json", "*.safetensors", "*.safetensors.index.json", "preprocessor_config.json"]


class Embed(nn.Module):
    """Wraps a transformers vision model so that ``forward(x)`` returns the card's embedding."""

    def __init__(self, model: nn.Module, kind: str, projector: nn.Module | None = None) -> None:
        super().__init__()
        self.model, self.kind, self.projector = model, kind, projector

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.kind == "llava":
            out = self.model(pixel_values=x, output_hidden_states=True)
            return self.projector(out.hidden_states[-2][:, 1:]).mean(dim=1)
        out = self.model(pixel_values=x)
        if self.kind == "pooled":
            return out.pooler_output
        return out.last_hidden_state.mean(dim=1)


def resolve_dir(
    ctx: BuildContext, repo_id: str, sub: str = "", patterns: list[str] | None = None
) -> Path:
    """Folder holding a transformers checkpoint: weights_path, $CRSBENCH_WEIGHTS_DIR, HF cache/hub."""
    name = ctx.card.name
    tried: list[str] = []
    local = []
    if ctx.weights_path is not None:
        local.append(Path(ctx.weights_path).expanduser() / sub)
    if weights_dir() is not None:
        local.append(weights_dir() / name / sub)
    for cand in local:
        tried.append(str(cand))
        if (cand / "config.json").is_file() or (cand / "mm_projector.safetensors").is_file():
            return cand
    from huggingface_hub import snapshot_download

    tried.append(f"HF cache {repo_id}@{ctx.card.revision or 'main'}")
    for offline in (True, False) if not hub_offline() else (True,):
        try:
            return Path(
                snapshot_download(
                    repo_id,
                    revision=ctx.card.revision,
                    allow_patterns=patterns or HF_FILES,
                    local_files_only=offline,
                )
            )
        except Exception as exc:  # not cached / no network / gated: one message below
            if not offline:
                tried.append(f"HF hub {repo_id} (download) failed: {type(exc).__name__}")
    hint = ctx.card.access_note if ctx.card.gated else ""
    raise missing_weights_error(
        name, [f"{repo_id} ({', '.join(patterns or HF_FILES)})"], tried, hint
    )


def _from_pretrained(cls: Any, path: Path, ctx: BuildContext) -> Any:
    return cls.from_pretrained(str(path), trust_remote_code=ctx.allow_remote_code)


def _weight_files(path: Path) -> tuple[Path, ...]:
    return tuple(sorted(path.glob("*.safetensors"))) or tuple(sorted(path.glob("*.bin")))


def _siglip(
    ctx: BuildContext, repo_id: str, real: dict[str, Any], kind: str, head: bool
) -> Backbone:
    from transformers import SiglipVisionConfig, SiglipVisionModel

    files: tuple[Path, ...] = ()
    if ctx.load_weights:
        path = resolve_dir(ctx, repo_id)
        model, files = _from_pretrained(SiglipVisionModel, path, ctx), _weight_files(path)
    else:
        with seeded(tiny_seed(ctx.card.name)):
            model = SiglipVisionModel(
                SiglipVisionConfig(**(TINY if ctx.tiny else real), vision_use_head=head)
            )
    return _siglip_backbone(model, kind, files)


def _siglip_backbone(model: Any, kind: str, files: tuple[Path, ...]) -> Backbone:
    def pool(tokens: torch.Tensor) -> torch.Tensor:
        return model.post_layernorm(tokens).mean(dim=1)

    size = int(model.config.image_size)
    return Backbone(Embed(model, kind), list(model.encoder.layers), pool, size, files)


SO400M = {
    "hidden_size": 1152,
    "intermediate_size": 4304,
    "num_hidden_layers": 27,
    "num_attention_heads": 16,
    "patch_size": 14,
}


def build_siglip(ctx: BuildContext) -> Backbone:
    """SigLIP so400m/14 at 384; embedding = MAP-head ``pooler_output`` (1152)."""
    return _siglip(
        ctx, "google/siglip-so400m-patch14-384", {**SO400M, "image_size": 384}, "pooled", True
    )


def build_medsiglip(ctx: BuildContext) -> Backbone:
    """MedSigLIP-448 vision tower; embedding = ``pooler_output`` = ``image_embeds`` (1152)."""
    return _siglip(ctx, "google/medsiglip-448", {**SO400M, "image_size": 448}, "pooled", True)


def _dinov2(ctx: BuildContext, repo_id: str, real: dict[str, Any]) -> Backbone:
    from transformers import Dinov2Config, Dinov2Model

    files: tuple[Path, ...] = ()
    if ctx.load_weights:
        path = resolve_dir(ctx, repo_id)
        model, files = _from_pretrained(Dinov2Model, path, ctx), _weight_files(path)
    else:
        with seeded(tiny_seed(ctx.card.name)):
            model = Dinov2Model(Dinov2Config(**(TINY if ctx.tiny else real)))

    def pool(tokens: torch.Tensor) -> torch.Tensor:
        return model.layernorm(tokens)[:, 0]

    size = TINY["image_size"] if ctx.tiny and not ctx.load_weights else ctx.card.input_size
    if ctx.tiny and ctx.load_weights:
        size = int(model.config.image_size)
    return Backbone(Embed(model, "pooled"), list(model.encoder.layer), pool, size, files)


VIT_B14 = {
    "hidden_size": 768,
    "intermediate_size": 3072,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "patch_size": 14,
    "image_size": 518,
}


def build_dinov2(ctx: BuildContext) -> Backbone:
    """DINOv2 ViT-B/14 (``facebook/dinov2-base``); CLS after layernorm (768)."""
    return _dinov2(ctx, "facebook/dinov2-base", VIT_B14)


def build_rad_dino(ctx: BuildContext) -> Backbone:
    """RAD-DINO (``microsoft/rad-dino``, a Dinov2Model); CLS after layernorm (768)."""
    return _dinov2(ctx, "microsoft/rad-dino", VIT_B14)


def _read_tensors(path: Path, keep: str) -> dict[str, torch.Tensor]:
    """Tensors of a safetensors file (or of the shards its index names) whose key contains ``keep``."""
    from safetensors import safe_open

    index = path / "model.safetensors.index.json"
    if index.is_file():
        weight_map = json.loads(index.read_text())["weight_map"]
        shards = sorted({f for k, f in weight_map.items() if keep in k})
    else:
        shards = [p.name for p in sorted(path.glob("*.safetensors"))]
    out: dict[str, torch.Tensor] = {}
    for shard in shards:
        with safe_open(str(path / shard), framework="pt", device="cpu") as fh:
            for key in fh.keys():
                if keep in key:
                    out[key] = fh.get_tensor(key)
    if not out:
        raise EncoderError(f"no tensor whose key contains {keep!r} in {path}")
    return out


def build_medgemma(ctx: BuildContext) -> Backbone:
    """MedGemma-4B vision tower only (SigLIP-400M at 896, no head); mean of tokens (1152)."""
    from transformers import SiglipVisionConfig, SiglipVisionModel

    files: tuple[Path, ...] = ()
    if ctx.load_weights:
        path = resolve_dir(ctx, "google/medgemma-4b-it")
        vcfg = json.loads((path / "config.json").read_text())["vision_config"]
        vcfg = {k: v for k, v in vcfg.items() if k not in ("model_type", "architectures")}
        model = SiglipVisionModel(SiglipVisionConfig(**vcfg))
        sd = {}
        for key, t in _read_tensors(path, "vision_tower.").items():
            sub = key.split("vision_tower.", 1)[1]
            sd[sub.removeprefix("vision_model.")] = t
        load_checked(model, sd, name=ctx.card.name, source=str(path), allow_missing=("head.*",))
        files = _weight_files(path)
    else:
        real = {**SO400M, "image_size": 896}
        with seeded(tiny_seed(ctx.card.name)):
            model = SiglipVisionModel(
                SiglipVisionConfig(**(TINY if ctx.tiny else real), vision_use_head=False)
            )
    return _siglip_backbone(model, "mean", files)


CLIP_L336 = {
    "hidden_size": 1024,
    "intermediate_size": 4096,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "patch_size": 14,
    "image_size": 336,
    "projection_dim": 768,
}


def build_llava_med(ctx: BuildContext) -> Backbone:
    """LLaVA-Med v1.5: CLIP-L/14-336 tower, layer -2 patch tokens → mm_projector → mean (4096)."""
    from transformers import CLIPVisionConfig, CLIPVisionModel

    files: tuple[Path, ...] = ()
    if ctx.load_weights:
        tower_dir = resolve_dir(
            ctx,
            "openai/clip-vit-large-patch14-336",
            sub="vision_tower",
            patterns=["config.json", "*.safetensors", "pytorch_model.bin"],
        )
        model = _from_pretrained(CLIPVisionModel, tower_dir, ctx)
        proj_dir = resolve_dir(
            ctx,
            "microsoft/llava-med-v1.5-mistral-7b",
            patterns=["config.json", "*.index.json", "mm_projector.safetensors"],
        )
        sd = {
            k.split("mm_projector.", 1)[1]: v
            for k, v in _read_tensors(proj_dir, "mm_projector.").items()
        }
        hidden, out_dim = sd["0.weight"].shape[1], sd["0.weight"].shape[0]
        projector = nn.Sequential(
            nn.Linear(hidden, out_dim), nn.GELU(), nn.Linear(out_dim, out_dim)
        )
        load_checked(projector, sd, name=ctx.card.name, source=str(proj_dir))
        files = _weight_files(tower_dir) + tuple(proj_dir.glob("mm_projector.safetensors"))
    else:
        cfg = TINY if ctx.tiny else CLIP_L336
        out_dim = 32 if ctx.tiny else ctx.card.embed_dim
        with seeded(tiny_seed(ctx.card.name)):
            model = CLIPVisionModel(CLIPVisionConfig(**cfg))
            h = cfg["hidden_size"]
            projector = nn.Sequential(nn.Linear(h, out_dim), nn.GELU(), nn.Linear(out_dim, out_dim))

    def pool(tokens: torch.Tensor) -> torch.Tensor:
        return model.post_layernorm(tokens[:, 0])

    size = int(model.config.image_size)
    return Backbone(Embed(model, "llava", projector), list(model.encoder.layers), pool, size, files)


__all__ = [
    "WEIGHTS_ENV",
    "build_dinov2",
    "build_llava_med",
    "build_medgemma",
    "build_medsiglip",
    "build_rad_dino",
    "build_siglip",
]
