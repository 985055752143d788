"""The config hash and the stored config JSON of the shipped configs, pinned.

A refactor (renamed config classes, constants moved to ``crsbench.protocol``, packaged data
moved) must leave every stored ``config_hash`` and stored config text identical: a change
here means results already in a store would no longer match their config.
"""

from __future__ import annotations

import hashlib

import pytest

from crsbench.config import (
    BenchmarkConfig,
    config_hash,
    config_json,
    load_packaged_config,
    parse_config,
)

#: (config hash, sha256 of the stored config JSON), output_dir=/results/x, base_dir=/base,
#: CRSBENCH_DATA=/data/crs.
PINNED = {
    # demo.yaml changed on purpose for the two-minute budget with data sized so that every
    # analysis has content (encoders at 64 px but the random ViT at 32, W 64, two seeds, LoRA
    # on APTOS at every fraction): a new demo store, not a refactor
    "demo": (
        "9208221bb91910b09357fd38782d426bd4b8ee4cdbefad99a0f30fbcf1140776",
        "55d38585887d5d379095de906a9ad66b4a861d2e20f7a64a34beb3aaf3474f79",
    ),
    "paper": (
        "00fe7f52b94f0a6c6315bda239839abb695474e621c013d4b5b6cd0bcd66110a",
        "3fcc8ccd3e68f8ff3fe959c4ec120fe54ec1a8c67e354d32726f285e7d4f48de",
    ),
    # every key at its default: pins the protocol's default values themselves (moved on
    # purpose when the default anchors became v2, the exact P: a config that names no anchors
    # now hashes as a new config; `anchors: v1` keeps the old hash)
    "defaults": (
        "21e72de5154047506904f98197b7f2ee317e03243c2c08d1b6fdb07a00efdeb4",
        "fed09e01eb0ae27a81235a26272a33597abb7f028aa9b9e35990a975d5fd9944",
    ),
}


def _load(name: str) -> BenchmarkConfig:
    if name == "defaults":
        raw = {"encoders": ["pixel"], "datasets": {"isic2019": {"root": "/data/isic"}}}
        return parse_config(raw, base_dir="/base", output_dir="/results/x")
    return load_packaged_config(name, output_dir="/results/x", base_dir="/base")


@pytest.mark.parametrize("name", sorted(PINNED))
def test_config_hash_and_stored_json_are_pinned(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRSBENCH_DATA", "/data/crs")
    cfg = _load(name)
    stored = hashlib.sha256(config_json(cfg).encode("utf-8")).hexdigest()
    assert (config_hash(cfg), stored) == PINNED[name]
