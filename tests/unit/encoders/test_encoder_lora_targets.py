"""Every family's card LoRA targets resolve in the real (tiny) model, with no fallback."""

from __future__ import annotations

import pytest
import torch

from crsbench.adapt import lora_targets
from crsbench.adapt.lora import match_modules
from crsbench.encoders import ENCODERS, PAPER_FAMILIES, build, get_card

WITH_TARGETS = [n for n in ENCODERS.names() if get_card(n).lora_targets]


def test_every_paper_family_has_card_targets() -> None:
    assert set(PAPER_FAMILIES) <= set(WITH_TARGETS)


@pytest.mark.parametrize("name", WITH_TARGETS)
def test_card_lora_targets_match_the_real_class(name: str) -> None:
    enc = build(name, tiny=True, pretrained=False)
    # pretrained-like weights: timm zero-initialises the last BN of each ResNet block, which
    # would make every conv2 of a *random* build dead (no gradient); real weights are not zero
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in enc.module.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=g))
    patterns = enc.card.lora_targets
    matched = match_modules(enc.module, patterns)
    assert matched, f"{name}: {list(patterns)} match no module of {type(enc.module).__name__}"
    names, source = lora_targets(enc)
    # "card", or "card; dropped (never learn): ..." where some matches are bypassed (timm
    # Beit reads qkv as a raw weight; LLaVA-Med never uses its last layer): never a default
    assert source.split(";")[0] == "card", f"{name}: fell back to {source!r}"
    assert names and set(names) <= set(matched)
