"""Loading paths: native checkpoint layouts round-trip into the tiny architectures, strictly."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from crsbench.core.errors import EncoderError
from crsbench.encoders import build, load_state_dict
from crsbench.protocol import LAYER_DEPTHS


def _images(n: int = 2, size: int = 64) -> torch.Tensor:
    return torch.randint(
        0, 256, (n, 3, size, size), dtype=torch.uint8, generator=torch.Generator().manual_seed(1)
    )


def _perturbed_source(name: str) -> tuple[torch.nn.Module, object]:
    """A tiny build whose weights differ from the default seed (so a load is visible)."""
    enc = build(name, tiny=True, pretrained=False)
    g = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for p in enc.module.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=g))
    return enc.module, enc


def _assert_same_features(src_enc: object, name: str, weights_path: Path) -> None:
    loaded = build(name, tiny=True, weights_path=weights_path)
    x = src_enc.preprocess(_images())
    a, b = src_enc.forward_features(x, LAYER_DEPTHS), loaded.forward_features(x, LAYER_DEPTHS)
    for d in LAYER_DEPTHS:
        torch.testing.assert_close(a[d], b[d], atol=1e-5, rtol=1e-5)
    assert loaded.weights_hash != build(name, tiny=True, pretrained=False).weights_hash


def test_timm_hub_layout_with_classifier_head(tmp_path: Path) -> None:
    module, enc = _perturbed_source("vit_b16")
    sd = {**module.state_dict(), "head.weight": torch.zeros(10, 64), "head.bias": torch.zeros(10)}
    save_file(sd, tmp_path / "model.safetensors")
    _assert_same_features(enc, "vit_b16", tmp_path)  # folder holding model.safetensors


def test_panderm_encoder_prefix_and_extras(tmp_path: Path) -> None:
    module, enc = _perturbed_source("panderm")
    sd = {f"encoder.{k}": v for k, v in module.state_dict().items()}
    sd["decoder.weight"] = torch.zeros(3)
    torch.save({"model": sd}, tmp_path / "p.pth")
    _assert_same_features(enc, "panderm", tmp_path / "p.pth")


def test_retfound_mae_checkpoint_with_namespace(tmp_path: Path) -> None:
    module, enc = _perturbed_source("retfound")
    sd = {k: v for k, v in module.state_dict().items() if not k.startswith("fc_norm.")}
    sd.update(
        {
            "norm.weight": torch.ones(64),
            "norm.bias": torch.zeros(64),
            "mask_token": torch.zeros(1, 1, 64),
            "decoder_embed.weight": torch.zeros(8, 64),
        }
    )
    torch.save({"model": sd, "args": argparse.Namespace(lr=1e-3), "epoch": 3}, tmp_path / "r.pth")
    loaded = build("retfound", tiny=True, weights_path=tmp_path / "r.pth")
    # fc_norm is not in the MAE checkpoint: it stays at identity init, as RETFound's own code
    assert torch.equal(loaded.module.fc_norm.weight, torch.ones(64))
    torch.testing.assert_close(
        loaded.module.blocks[0].attn.qkv.weight, module.blocks[0].attn.qkv.weight
    )


def test_biovil_image_model_layout(tmp_path: Path) -> None:
    module, enc = _perturbed_source("biovil")
    sd = {f"encoder.encoder.{k}": v for k, v in module.state_dict().items()}
    sd["encoder.encoder.fc.weight"] = torch.zeros(1000, 2048)
    sd["projector.model.0.weight"] = torch.zeros(128, 2048, 1, 1)
    torch.save(sd, tmp_path / "biovil.pt")
    _assert_same_features(enc, "biovil", tmp_path / "biovil.pt")


@pytest.mark.parametrize("name", ["chexzero", "clip"])
def test_openai_clip_layout_text_tower_ignored(tmp_path: Path, name: str) -> None:
    module, enc = _perturbed_source(name)
    sd = {f"visual.{k}": v for k, v in module.state_dict().items()}
    sd["token_embedding.weight"] = torch.zeros(5, 4)  # text tower: never loaded
    torch.save(sd, tmp_path / "ckpt.pt")
    _assert_same_features(enc, name, tmp_path / "ckpt.pt")


def test_biomedclip_open_clip_layout(tmp_path: Path) -> None:
    module, enc = _perturbed_source("biomedclip")
    sd = {f"visual.{k}": v for k, v in module.state_dict().items()}
    sd["text.transformer.embeddings.word_embeddings.weight"] = torch.zeros(5, 4)
    torch.save(sd, tmp_path / "open_clip_pytorch_model.bin")
    _assert_same_features(enc, "biomedclip", tmp_path)


@pytest.mark.parametrize("name", ["siglip", "rad_dino"])
def test_transformers_save_pretrained_dir(tmp_path: Path, name: str) -> None:
    module, enc = _perturbed_source(name)
    module.model.save_pretrained(tmp_path)
    _assert_same_features(enc, name, tmp_path)


def test_medgemma_reads_only_vision_tower_from_shards(tmp_path: Path) -> None:
    module, enc = _perturbed_source("medgemma")
    tower = {
        f"model.vision_tower.vision_model.{k}": v.contiguous()
        for k, v in module.model.state_dict().items()
    }
    lm = {"model.language_model.embed_tokens.weight": torch.zeros(4, 4)}
    save_file(tower, tmp_path / "model-00001-of-00002.safetensors")
    save_file(lm, tmp_path / "model-00002-of-00002.safetensors")
    weight_map = {
        **dict.fromkeys(tower, "model-00001-of-00002.safetensors"),
        **dict.fromkeys(lm, "model-00002-of-00002.safetensors"),
    }
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    vcfg = module.model.config.to_dict()
    (tmp_path / "config.json").write_text(
        json.dumps({"model_type": "gemma3", "vision_config": vcfg})
    )
    # the LM shard is never opened: make it unreadable garbage to prove it
    (tmp_path / "model-00002-of-00002.safetensors").write_bytes(b"not a safetensors file")
    _assert_same_features(enc, "medgemma", tmp_path)


def test_llava_med_projector_from_shard(tmp_path: Path) -> None:
    module, enc = _perturbed_source("llava_med")
    module.model.save_pretrained(tmp_path / "vision_tower")
    proj = {
        f"model.mm_projector.{k}": v.contiguous() for k, v in module.projector.state_dict().items()
    }
    save_file(proj, tmp_path / "model-00004-of-00004.safetensors")
    (tmp_path / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": dict.fromkeys(proj, "model-00004-of-00004.safetensors")})
    )
    (tmp_path / "config.json").write_text("{}")
    _assert_same_features(enc, "llava_med", tmp_path)


def test_missing_block_key_is_named(tmp_path: Path) -> None:
    module, _ = _perturbed_source("panderm")
    sd = {k: v for k, v in module.state_dict().items() if not k.startswith("blocks.1.")}
    torch.save(sd, tmp_path / "p.pth")
    with pytest.raises(EncoderError, match=r"missing keys \[blocks\.1\."):
        build("panderm", tiny=True, weights_path=tmp_path / "p.pth")


def test_missing_weights_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRSBENCH_WEIGHTS_DIR", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    with pytest.raises(EncoderError) as info:
        build("panderm")
    msg = str(info.value)
    assert "panderm_ll_data6_checkpoint-499.pth" in msg
    assert str(tmp_path / "panderm") in msg and "weights_path" in msg and "Google Drive" in msg
    with pytest.raises(EncoderError, match="Hugging Face cache"):
        build("vit_b16")
    with pytest.raises(EncoderError, match="CRSBENCH_WEIGHTS_DIR|weights_path"):
        build("siglip")


def test_unsafe_pickle_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "evil.pt"
    torch.save({"w": torch.zeros(2), "payload": Path("/etc/passwd")}, path)
    with pytest.raises(EncoderError, match="weights_only=True"):
        load_state_dict(path)


def test_non_dict_checkpoint_is_refused(tmp_path: Path) -> None:
    torch.save(torch.zeros(3), tmp_path / "t.pt")
    with pytest.raises(EncoderError, match="must hold a dict"):
        load_state_dict(tmp_path / "t.pt")
