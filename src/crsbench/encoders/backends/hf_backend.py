"""transformers backend, vision towers only: SigLIP, DINOv2, RAD-DINO, MedSigLIP, MedGemma,
LLaVA-Med (CLIP-L/14-336 tower + mm_projector).

Language models are never instantiated: SigLIP/MedSigLIP load through ``SiglipVisionModel``
(text weights in the file are skipped), MedGemma reads only ``vision_tower.*`` tensors from its
shards, and LLaVA-Med reads only ``model.mm_projector.*`` from the shard that holds them.

Every load is strict: ``from_pretrained``'s loading info (missing, unexpected and mismatched
keys, after transformers' own key renames) goes through the same check as every other backend,
with the card's allow-lists (text towers, language-model keys) as the only exceptions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from torch import nn

from crsbench.core.errors import EncoderError
from crsbench.encoders.backends.common import load_checked, refuse_bad_keys, seeded, tiny_seed
from crsbench.encoders.base import Backbone, BuildContext
from crsbench.encoders.weights import (
    WEIGHTS_ENV,
    ShardedTensors,
    hub_offline,
    missing_weights_error,
    weights_dir,
)

TINY: dict[str, Any] = {
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
            if self.projector is None:
                raise EncoderError("Embed(kind='llava') needs the LLaVA projector.")
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
    root = weights_dir()
    if root is not None:
        local.append(root / name / sub)
    for cand in local:
        tried.append(str(cand))
        if (cand / "config.json").is_file():
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
    """``cls.from_pretrained`` that refuses missing, unexpected or mismatched keys.

    Mismatched shapes are reported by transformers (``ignore_mismatched_sizes=True`` makes them
    part of the loading info instead of a bare RuntimeError) and are always refused here.
    """
    model, info = cls.from_pretrained(
        str(path),
        trust_remote_code=ctx.allow_remote_code,
        output_loading_info=True,
        ignore_mismatched_sizes=True,
    )
    card, files = ctx.card, _weight_files(path)
    source = f"{path} ({', '.join(f.name for f in files)})" if files else str(path)
    if info.get("error_msgs"):
        raise EncoderError(
            f"weights of encoder {card.name!r} from {source} failed to load: "
            + "; ".join(map(str, info["error_msgs"]))
        )
    refuse_bad_keys(
        name=card.name,
        source=source,
        missing=info.get("missing_keys", ()),
        unexpected=info.get("unexpected_keys", ()),
        mismatched=[
            (key, tuple(want), tuple(got)) for key, got, want in info.get("mismatched_keys", ())
        ],
        allow_missing=card.allow_missing,
        ignore_unexpected=card.ignore_unexpected,
    )
    return model


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


SO400M: dict[str, Any] = {
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
    """MedSigLIP-448 vision tower; embedding = MAP-head ``pooler_output`` (1152).

    Not L2-normalised: Google's serving code returns ``image_embeds`` = ``pooler_output`` divided
    by its L2 norm (``SiglipModel.forward``); the probe standardises features itself, and the
    norm is kept as SigLIP's is.
    """
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


#: Where MedGemma's vision tower sits in its checkpoint: transformers 5.x in memory, the 4.5x
#: layout of the hub release, then what ``save_pretrained`` of transformers >= 5.6 writes (the
#: flat tower, ``vision_tower.encoder.*``). The first prefix found is read; the strict check
#: refuses every other key the card does not name.
GEMMA_TOWER = ("model.vision_tower.vision_model.", "vision_tower.vision_model.", "vision_tower.")


def _find_prefix(sd: ShardedTensors, candidates: tuple[str, ...], name: str) -> str:
    """The first of ``candidates`` some key of ``sd`` starts with (other copies are refused)."""
    for prefix in candidates:
        if any(k.startswith(prefix) for k in sd):
            return prefix
    raise EncoderError(
        f"weights of encoder {name!r}: no key in {sd.folder} starts with any of "
        f"{list(candidates)}; is this the right checkpoint?"
    )


def build_medgemma(ctx: BuildContext) -> Backbone:
    """MedGemma-4B vision tower only (SigLIP-400M at 896, no head); mean of tokens (1152)."""
    from transformers import SiglipVisionConfig, SiglipVisionModel

    files: tuple[Path, ...] = ()
    if ctx.load_weights:
        path = resolve_dir(ctx, "google/medgemma-4b-it")
        vcfg = json.loads((path / "config.json").read_text())["vision_config"]
        vcfg = {k: v for k, v in vcfg.items() if k not in ("model_type", "architectures")}
        model = SiglipVisionModel(SiglipVisionConfig(**vcfg))
        sd = ShardedTensors(path)
        _load_card_checked(model, sd, ctx, path, _find_prefix(sd, GEMMA_TOWER, ctx.card.name))
        files = _weight_files(path)
    else:
        real = {**SO400M, "image_size": 896}
        with seeded(tiny_seed(ctx.card.name)):
            model = SiglipVisionModel(
                SiglipVisionConfig(**(TINY if ctx.tiny else real), vision_use_head=False)
            )
    return _siglip_backbone(model, "mean", files)


CLIP_L336: dict[str, Any] = {
    "hidden_size": 1024,
    "intermediate_size": 4096,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "patch_size": 14,
    "image_size": 336,
    "projection_dim": 768,
}


LLAVA_PROJECTOR = "model.mm_projector."


def _load_card_checked(
    module: nn.Module, sd: ShardedTensors, ctx: BuildContext, path: Path, prefix: str
) -> None:
    load_checked(
        module,
        sd,
        name=ctx.card.name,
        source=str(path),
        prefix=prefix,
        allow_missing=ctx.card.allow_missing,
        ignore_unexpected=ctx.card.ignore_unexpected,
    )


def _llava_dir(ctx: BuildContext) -> tuple[Path, tuple[Path, ...]]:
    """The LLaVA-Med folder and its projector shard(s): config and index first, then (when
    the index names shards that are not there yet) the same fetch with those shards added."""
    from crsbench.encoders.llava_projector import INDEX, LLAVA_REPO, projector_files
    from crsbench.encoders.llava_projector import projector_shards as shards_of

    base = ["config.json", INDEX]
    path = resolve_dir(ctx, LLAVA_REPO, patterns=base)
    if not (path / INDEX).is_file():
        raise EncoderError(
            f"weights of encoder {ctx.card.name!r}: {path} has no {INDEX}, which names the "
            "shard holding model.mm_projector.*"
        )
    shards = shards_of(path / INDEX)
    if not all((path / s).is_file() for s in shards):
        path = resolve_dir(ctx, LLAVA_REPO, patterns=[*base, *shards])
    return path, projector_files(path)


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
        proj_dir, proj_files = _llava_dir(ctx)
        sd = ShardedTensors(proj_dir)
        prefix = _find_prefix(sd, (LLAVA_PROJECTOR,), ctx.card.name)
        out_dim, hidden = sd[f"{prefix}0.weight"].shape
        projector = nn.Sequential(
            nn.Linear(hidden, out_dim), nn.GELU(), nn.Linear(out_dim, out_dim)
        )
        _load_card_checked(projector, sd, ctx, proj_dir, prefix)
        files = _weight_files(tower_dir) + proj_files
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
