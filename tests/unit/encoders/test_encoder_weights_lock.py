"""weights.lock: first load records, a changed byte is refused naming both hashes, the flag
updates, the store carries the entries, BioViL's published MD5 is checked."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from crsbench.core.errors import EncoderError
from crsbench.encoders import build, get_card
from crsbench.encoders.weights_lock import LOCK_FILE, lock_entry, read_lock
from crsbench.runs.weights_lock_stage import lock_encoders
from crsbench.store.cards import CardFacts


def _weights(folder: Path) -> Path:
    enc = build("vit_b16", tiny=True, pretrained=False)
    folder.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in enc.module.state_dict().items()},
              folder / "model.safetensors")  # fmt: skip
    return folder


def _flip_last_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01  # the last byte of the last tensor: still a valid file
    path.write_bytes(bytes(data))


def test_first_run_records_then_a_changed_byte_is_refused(tmp_path: Path) -> None:
    folder, out = _weights(tmp_path / "w"), tmp_path / "out"
    out.mkdir()
    first = lock_encoders({"vit_b16": build("vit_b16", tiny=True, weights_path=folder)}, out)
    text = (out / LOCK_FILE).read_text()
    assert text.startswith("{\n  ")  # indented, human-readable
    old_sha = hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()
    assert read_lock(out / LOCK_FILE)["vit_b16"]["files"] == [
        {"file": "model.safetensors", "sha256": old_sha}
    ]
    assert first["vit_b16"]["revision"] == "local"
    _flip_last_byte(folder / "model.safetensors")
    new_sha = hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()
    changed = {"vit_b16": build("vit_b16", tiny=True, weights_path=folder)}
    with pytest.raises(EncoderError) as err:
        lock_encoders(changed, out)
    msg = str(err.value)
    assert old_sha in msg and new_sha in msg and "model.safetensors" in msg
    assert "--update-weights-lock" in msg
    assert (out / LOCK_FILE).read_text() == text  # a refusal leaves the lock as it was
    lock_encoders(changed, out, update=True)
    assert read_lock(out / LOCK_FILE)["vit_b16"]["files"][0]["sha256"] == new_sha


def test_same_weights_pass_and_other_families_are_kept(tmp_path: Path) -> None:
    folder, out = _weights(tmp_path / "w"), tmp_path / "out"
    out.mkdir()
    (out / LOCK_FILE).write_text(json.dumps({"version": 1, "families": {"mae": {"files": []}}}))
    enc = build("vit_b16", tiny=True, weights_path=folder)
    lock_encoders({"vit_b16": enc}, out)
    lock_encoders({"vit_b16": enc}, out)
    assert set(read_lock(out / LOCK_FILE)) == {"mae", "vit_b16"}
    assert lock_encoders({"tiny": build("vit_b16", tiny=True, pretrained=False)}, out) == {}


def test_hub_snapshot_commit_is_the_resolved_revision(tmp_path: Path) -> None:
    snap = tmp_path / "models--timm--x" / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "model.safetensors").write_bytes(b"x")
    entry = lock_entry(get_card("vit_b16"), [snap / "model.safetensors"])
    assert entry["revision"] == "abc123" and entry["source"] == get_card("vit_b16").source


def test_store_provenance_carries_the_lock_entries() -> None:
    entry = {"source": "s", "revision": "r", "files": [{"file": "f", "sha256": "0" * 64}]}
    facts = CardFacts({"vit_b16": "general"}, {}, {"vit_b16": entry})
    rows = facts.rows()
    assert ("encoder", "vit_b16", "weights_lock", json.dumps(entry, sort_keys=True)) in rows
    import pandas as pd

    table = pd.DataFrame(rows, columns=["kind", "name", "fact", "value"])
    assert CardFacts.from_table(table).weights_lock == {"vit_b16": entry}


def test_biovil_published_md5_is_checked(tmp_path: Path) -> None:
    card = get_card("biovil")
    assert card.weights_md5 == "02ce6ee460f72efd599295f440dbb453"
    path = tmp_path / card.weight_files[0]
    torch.save({"x": torch.zeros(2)}, path)
    with pytest.raises(EncoderError, match=r"MD5 [0-9a-f]{32}; the authors publish 02ce6ee4"):
        lock_entry(card, [path])
    md5 = hashlib.md5(path.read_bytes()).hexdigest()
    assert lock_entry(replace(card, weights_md5=md5), [path])["files"][0]["file"] == path.name
