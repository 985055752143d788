"""Strict loading, family by family: a tiny checkpoint of the real class, saved in the upstream
file layout, loads exactly; with one key deleted, renamed or reshaped, or with a stray second
copy of a key outside the family's prefix, the build is refused and the message names the key.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file, save_file

from crsbench.core.errors import EncoderError
from crsbench.encoders import PAPER_FAMILIES, build

Tensors = dict[str, torch.Tensor]


@dataclass(frozen=True)
class Layout:
    """How one family's checkpoint is written upstream, and which key the test breaks.

    ``write(enc, folder)`` saves the tiny source ``enc`` in the upstream layout and returns
    ``(weights_path, tensor_file)``; the key broken is the one in ``tensor_file`` that starts
    with ``prefix`` and ends with ``probe``.
    """

    write: Callable[[Any, Path], tuple[Path, Path]]
    prefix: str
    probe: str


def _safetensors(sd: Tensors, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in sd.items()}, path, metadata={"format": "pt"})
    return path


def _timm_hub(head: Tensors) -> Callable[[Any, Path], tuple[Path, Path]]:
    """timm hub folder: ``model.safetensors`` with the classifier head the model drops."""

    def write(enc: Any, folder: Path) -> tuple[Path, Path]:
        sd = {**enc.module.state_dict(), **head}
        return folder, _safetensors(sd, folder / "model.safetensors")

    return write


def _open_clip_full(enc: Any, patch: int) -> Tensors:
    """State dict of a whole open_clip ``CLIP`` (text tower too) holding ``enc``'s visual."""
    from open_clip.model import CLIP, CLIPTextCfg, CLIPVisionCfg

    vision = CLIPVisionCfg(layers=4, width=64, head_width=64, patch_size=patch, image_size=64)
    text = CLIPTextCfg(context_length=8, vocab_size=50, width=32, heads=2, layers=1)
    model = CLIP(32, vision, text, quick_gelu=True)
    model.visual.load_state_dict(enc.module.state_dict())
    return model.state_dict()


def _clip(enc: Any, folder: Path) -> tuple[Path, Path]:
    path = _safetensors(_open_clip_full(enc, 16), folder / "open_clip_model.safetensors")
    return folder, path


def _chexzero(enc: Any, folder: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True)
    torch.save(_open_clip_full(enc, 32), folder / "chexzero.pt")  # OpenAI CLIP layout
    return folder / "chexzero.pt", folder / "chexzero.pt"


def _biomedclip(enc: Any, folder: Path) -> tuple[Path, Path]:
    sd = {f"visual.{k}": v for k, v in enc.module.state_dict().items()}
    sd["text.transformer.embeddings.word_embeddings.weight"] = torch.zeros(5, 4)
    sd["text.proj.0.weight"] = torch.zeros(4, 4)
    sd["logit_scale"] = torch.zeros(())
    folder.mkdir(parents=True)
    torch.save(sd, folder / "open_clip_pytorch_model.bin")
    return folder, folder / "open_clip_pytorch_model.bin"


def _hf_full(vision: Any, config_cls: Any, model_cls: Any, folder: Path) -> None:
    """``save_pretrained`` of the whole two-tower model holding ``vision`` (hub layout)."""
    text = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1}
    cfg = config_cls(
        vision_config=vision.config.to_dict(),
        text_config={**text, "num_attention_heads": 2, "vocab_size": 50},
    )
    full = model_cls(cfg)
    full.vision_model.load_state_dict(vision.state_dict())
    full.save_pretrained(folder)


def _siglip(enc: Any, folder: Path) -> tuple[Path, Path]:
    from transformers import SiglipConfig, SiglipModel

    _hf_full(enc.module.model, SiglipConfig, SiglipModel, folder)
    return folder, folder / "model.safetensors"


def _dinov2(enc: Any, folder: Path) -> tuple[Path, Path]:
    enc.module.model.save_pretrained(folder)  # the hub layout (attention.attention.query)
    return folder, folder / "model.safetensors"


def _llava_med(enc: Any, folder: Path) -> tuple[Path, Path]:
    from transformers import CLIPConfig, CLIPModel

    _hf_full(enc.module.model, CLIPConfig, CLIPModel, folder / "vision_tower")
    proj = {f"model.mm_projector.{k}": v for k, v in enc.module.projector.state_dict().items()}
    lm = {"model.embed_tokens.weight": torch.zeros(4, 4), "lm_head.weight": torch.zeros(4, 4)}
    _safetensors(proj, folder / "model-00002-of-00002.safetensors")
    _safetensors(lm, folder / "model-00001-of-00002.safetensors")
    _write_index(folder)
    (folder / "config.json").write_text("{}")
    return folder, folder / "vision_tower" / "model.safetensors"


def _medgemma(enc: Any, folder: Path) -> tuple[Path, Path]:
    tower = {
        f"model.vision_tower.vision_model.{k}": v for k, v in enc.module.model.state_dict().items()
    }
    shard = _safetensors(tower, folder / "model-00001-of-00002.safetensors")
    lm = {"model.language_model.embed_tokens.weight": torch.zeros(4, 4)}
    _safetensors(lm, folder / "model-00002-of-00002.safetensors")
    _write_index(folder)
    # the LM shard is never opened: garbage proves it
    (folder / "model-00002-of-00002.safetensors").write_bytes(b"not a safetensors file")
    vcfg = enc.module.model.config.to_dict()
    (folder / "config.json").write_text(json.dumps({"model_type": "gemma3", "vision_config": vcfg}))
    return folder, shard


def _write_index(folder: Path) -> None:
    """``model.safetensors.index.json`` naming the shard of every key (readable shards only)."""
    index = folder / "model.safetensors.index.json"
    weight_map = json.loads(index.read_text())["weight_map"] if index.is_file() else {}
    for shard in sorted(folder.glob("model-*.safetensors")):
        try:
            keys = load_file(shard).keys()
        except Exception:  # the garbage LM shard: keep its entries
            continue
        weight_map = {k: f for k, f in weight_map.items() if f != shard.name}
        weight_map.update(dict.fromkeys(keys, shard.name))
    index.write_text(json.dumps({"weight_map": weight_map}))


def _panderm(enc: Any, folder: Path) -> tuple[Path, Path]:
    sd = {f"encoder.{k}": v for k, v in enc.module.state_dict().items()}
    sd.update(
        {"regresser.blocks.0.norm1.weight": torch.ones(4), "mask_token": torch.zeros(1, 1, 4)}
    )
    sd["decoder.head.weight"] = torch.zeros(4, 4)
    folder.mkdir(parents=True)
    torch.save({"model": sd, "epoch": 499}, folder / "panderm.pth")
    return folder / "panderm.pth", folder / "panderm.pth"


def _retfound(enc: Any, folder: Path) -> tuple[Path, Path]:
    with torch.no_grad():  # the MAE checkpoint has no fc_norm: it loads at its identity init
        enc.module.fc_norm.weight.fill_(1.0)
        enc.module.fc_norm.bias.zero_()
    sd = {k: v for k, v in enc.module.state_dict().items() if not k.startswith("fc_norm.")}
    sd.update({"norm.weight": torch.ones(64), "norm.bias": torch.zeros(64)})
    sd.update({"mask_token": torch.zeros(1, 1, 64), "decoder_embed.weight": torch.zeros(8, 64)})
    folder.mkdir(parents=True)
    torch.save({"model": sd, "epoch": 3}, folder / "retfound.pth")
    return folder / "retfound.pth", folder / "retfound.pth"


def _biovil(enc: Any, folder: Path) -> tuple[Path, Path]:
    sd = {f"encoder.encoder.{k}": v for k, v in enc.module.state_dict().items()}
    sd["encoder.encoder.fc.weight"] = torch.zeros(1000, 2048)
    sd["projector.model.0.weight"] = torch.zeros(128, 2048, 1, 1)
    folder.mkdir(parents=True)
    torch.save(sd, folder / "biovil.pt")
    return folder / "biovil.pt", folder / "biovil.pt"


VIT_PROBE = "blocks.1.mlp.fc1.weight"
HF_PROBE = "layers.1.mlp.fc1.weight"
LAYOUTS: dict[str, Layout] = {
    "resnet50": Layout(
        _timm_hub({"fc.weight": torch.zeros(10, 2048)}), "", "layer2.0.conv1.weight"
    ),
    "vit_b16": Layout(_timm_hub({"head.weight": torch.zeros(10, 64)}), "", VIT_PROBE),
    "mae": Layout(_timm_hub({}), "", VIT_PROBE),
    "clip": Layout(_clip, "visual.", "resblocks.1.mlp.c_fc.weight"),
    "siglip": Layout(_siglip, "vision_model.", HF_PROBE),
    "dinov2": Layout(_dinov2, "", "layer.1.mlp.fc1.weight"),
    "biomedclip": Layout(_biomedclip, "visual.", VIT_PROBE),
    "llava_med": Layout(_llava_med, "vision_model.", HF_PROBE),
    "medsiglip": Layout(_siglip, "vision_model.", HF_PROBE),
    "medgemma": Layout(_medgemma, "model.vision_tower.vision_model.", HF_PROBE),
    "panderm": Layout(_panderm, "encoder.", VIT_PROBE),
    "retfound": Layout(_retfound, "", VIT_PROBE),
    "rad_dino": Layout(_dinov2, "", "layer.1.mlp.fc1.weight"),
    "biovil": Layout(_biovil, "encoder.encoder.", "layer2.0.conv1.weight"),
    "chexzero": Layout(_chexzero, "visual.", "resblocks.1.mlp.c_fc.weight"),
}


def _rewrite(path: Path, change: Callable[[Tensors], Tensors]) -> None:
    """Apply ``change`` to the tensors of ``path`` (its ``model`` entry if it has one)."""
    if path.suffix == ".safetensors":
        _safetensors(change(load_file(path)), path)
        if (path.parent / "model.safetensors.index.json").is_file():
            _write_index(path.parent)
        return
    obj = torch.load(path, weights_only=True)
    if "model" in obj:
        obj["model"] = change(obj["model"])
    else:
        obj = change(obj)
    torch.save(obj, path)


@dataclass(frozen=True)
class Saved:
    """A family's tiny source encoder and its pristine upstream-layout checkpoint."""

    enc: Any
    folder: Path
    weights: Path  # what build(weights_path=...) gets, relative to folder
    tensors: Path  # the file holding the probed key, relative to folder

    def copy(self, dest: Path) -> tuple[Path, Path]:
        """Copy to ``dest``; return the copy's ``(weights_path, tensor_file)``."""
        shutil.copytree(self.folder, dest)
        return dest / self.weights, dest / self.tensors


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Saved]:
    """``saved(name)``: the family's :class:`Saved`, written once per module."""
    cache: dict[str, Saved] = {}

    def get(name: str) -> Saved:
        if name not in cache:
            enc = build(name, tiny=True, pretrained=False)
            g = torch.Generator().manual_seed(3)
            with torch.no_grad():  # differ from the default seed, so a load is visible
                for p in enc.module.parameters():
                    p.add_(0.05 * torch.randn(p.shape, generator=g))
            folder = tmp_path_factory.mktemp(name) / "ckpt"
            weights, tensors = LAYOUTS[name].write(enc, folder)
            cache[name] = Saved(
                enc, folder, weights.relative_to(folder), tensors.relative_to(folder)
            )
        return cache[name]

    return get


def _probed_key(path: Path, layout: Layout) -> str:
    sd = load_file(path) if path.suffix == ".safetensors" else torch.load(path, weights_only=True)
    sd = sd.get("model", sd)
    hits = [k for k in sd if k.startswith(layout.prefix) and k.endswith(layout.probe)]
    assert len(hits) == 1, f"probe {layout.probe!r} must pick one key of {path}: {hits}"
    return hits[0]


def _part(message: str, label: str) -> str:
    """The bracketed list after ``label`` in a refusal message."""
    found = re.search(re.escape(label) + r" \[([^\]]*)\]", message)
    assert found, f"no {label!r} in: {message}"
    return found.group(1)


def test_layouts_cover_every_family_with_weights() -> None:
    assert set(LAYOUTS) == set(PAPER_FAMILIES)


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_upstream_layout_loads_exactly(name: str, saved: Callable[[str], Saved]) -> None:
    src = saved(name)
    loaded = build(name, tiny=True, weights_path=src.folder / src.weights)
    x = src.enc.preprocess(torch.randint(0, 256, (2, 3, 40, 52), dtype=torch.uint8))
    with torch.inference_mode():
        torch.testing.assert_close(loaded.module(x), src.enc.module(x), atol=1e-5, rtol=1e-5)


def _delete(key: str) -> Callable[[Tensors], Tensors]:
    return lambda sd: {k: v for k, v in sd.items() if k != key}


def _rename(key: str) -> Callable[[Tensors], Tensors]:
    new = key.replace("fc1.", "fc_1.").replace("c_fc.", "c_fc1.").replace("conv1.", "conv_1.")
    return lambda sd: {(new if k == key else k): v for k, v in sd.items()}


def _reshape(key: str) -> Callable[[Tensors], Tensors]:
    return lambda sd: {k: (v[:-1].clone() if k == key else v) for k, v in sd.items()}


def _stray_copy(key: str) -> Callable[[Tensors], Tensors]:
    return lambda sd: {**sd, f"teacher.{key}": sd[key].clone()}


def _refusal(name: str, saved: Callable[[str], Saved], tmp: Path, change: Any) -> tuple[str, str]:
    """Break the probed key with ``change`` and return (the key, the refusal message)."""
    weights, tensors = saved(name).copy(tmp / "broken")
    key = _probed_key(tensors, LAYOUTS[name])
    _rewrite(tensors, change(key))
    with pytest.raises(EncoderError) as info:
        build(name, tiny=True, weights_path=weights)
    message = str(info.value)
    assert "do not fit the architecture" in message and str(tmp / "broken") in message
    return key, message


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_deleted_key_is_refused_and_named(
    name: str, saved: Callable[[str], Saved], tmp_path: Path
) -> None:
    _, message = _refusal(name, saved, tmp_path, _delete)
    assert LAYOUTS[name].probe in _part(message, "missing keys")


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_renamed_key_is_refused_and_named(
    name: str, saved: Callable[[str], Saved], tmp_path: Path
) -> None:
    key, message = _refusal(name, saved, tmp_path, _rename)
    assert LAYOUTS[name].probe in _part(message, "missing keys")
    renamed = _rename(key)({key: torch.zeros(1)})
    tail = next(iter(renamed)).removeprefix(LAYOUTS[name].prefix)
    assert tail != LAYOUTS[name].probe and tail in _part(message, "unexpected keys")


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_reshaped_key_is_refused_and_named(
    name: str, saved: Callable[[str], Saved], tmp_path: Path
) -> None:
    _, message = _refusal(name, saved, tmp_path, _reshape)
    assert re.search(re.escape(LAYOUTS[name].probe) + r" must be \(", message)
    assert LAYOUTS[name].probe in _part(message, "shape mismatches")


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_second_copy_outside_the_prefix_is_refused(
    name: str, saved: Callable[[str], Saved], tmp_path: Path
) -> None:
    key, message = _refusal(name, saved, tmp_path, _stray_copy)
    assert f"teacher.{key}" in _part(message, "unexpected keys")
