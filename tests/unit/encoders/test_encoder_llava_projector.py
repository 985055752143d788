"""LLaVA-Med's projector: found via the index, fetched with the tower, required, and keyed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from crsbench.core.errors import EncoderError
from crsbench.encoders import build, weights_available, weights_unavailable_reason
from crsbench.encoders.llava_projector import INDEX, projector_shards

SHARD = "model-00004-of-00004.safetensors"


def _folder(root: Path, shift: float = 0.0) -> Path:
    """A LLaVA-Med layout: vision_tower/ (CLIP folder), index, an absent LM shard, the
    projector shard; ``shift`` changes the projector only."""
    enc = build("llava_med", tiny=True, pretrained=False)
    enc.module.model.save_pretrained(root / "vision_tower")
    proj = {
        f"model.mm_projector.{k}": (v + shift).contiguous()
        for k, v in enc.module.projector.state_dict().items()
    }
    save_file(proj, root / SHARD)
    weight_map = {
        **dict.fromkeys(proj, SHARD),
        "lm_head.weight": "model-00001-of-00004.safetensors",
    }
    (root / INDEX).write_text(json.dumps({"weight_map": weight_map}))
    (root / "config.json").write_text("{}")
    return root


def test_index_names_the_projector_shard(tmp_path: Path) -> None:
    assert projector_shards(_folder(tmp_path) / INDEX) == (SHARD,)
    (tmp_path / INDEX).write_text(json.dumps({"weight_map": {"lm_head.weight": "a"}}))
    with pytest.raises(EncoderError, match=r"index.json: no key starts with 'model.mm_projector.'"):
        projector_shards(tmp_path / INDEX)


def test_two_projectors_give_two_cache_keys(tmp_path: Path) -> None:
    a = build("llava_med", tiny=True, weights_path=_folder(tmp_path / "a"))
    b = build("llava_med", tiny=True, weights_path=_folder(tmp_path / "b", shift=0.01))
    assert SHARD in {p.name for p in a._weight_files}
    assert a.weights_hash != b.weights_hash  # the tower files are identical


def test_missing_projector_shard_is_refused_when_building(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    (folder / SHARD).unlink()
    with pytest.raises(EncoderError, match=SHARD):
        build("llava_med", tiny=True, weights_path=folder)


def test_missing_projector_makes_llava_med_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "weights"
    folder = _folder(root / "llava_med")
    monkeypatch.setenv("CRSBENCH_WEIGHTS_DIR", str(root))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert weights_unavailable_reason("llava_med") is None and weights_available("llava_med")
    (folder / SHARD).unlink()
    assert not weights_available("llava_med")
    reason = weights_unavailable_reason("llava_med")
    assert reason is not None and SHARD in reason and "projector" in reason
    (folder / INDEX).unlink()
    assert INDEX in str(weights_unavailable_reason("llava_med"))


def test_hub_fetch_adds_the_projector_shard_to_the_allow_patterns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Online: config + index first, then the shard the index names; the tower separately."""
    import huggingface_hub

    full = _folder(tmp_path / "full")
    hub = tmp_path / "hub"
    hub.mkdir()
    calls: list[tuple[str, list[str]]] = []

    def fake(repo_id: str, *, allow_patterns: list[str], local_files_only: bool, **_: object):
        calls.append((repo_id, list(allow_patterns)))
        if repo_id.startswith("openai/"):
            return str(full / "vision_tower")
        for name in allow_patterns:
            if (full / name).is_file():
                (hub / name).write_bytes((full / name).read_bytes())
        return str(hub)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake)
    monkeypatch.delenv("CRSBENCH_WEIGHTS_DIR", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(
        "crsbench.encoders.base.BuildContext.load_weights", property(lambda self: True)
    )
    enc = build("llava_med", tiny=True)
    llava = [p for r, p in calls if r.startswith("microsoft/")]
    assert llava[0] == ["config.json", INDEX] and SHARD in llava[-1]
    x = torch.zeros(1, 3, 56, 56)
    assert enc.forward_features(x)[1.0].shape[0] == 1
