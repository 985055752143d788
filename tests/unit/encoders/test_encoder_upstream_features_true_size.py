"""Upstream-equivalent features at the TRUE architecture sizes (#27 point 2), slow suite.

The same comparison as the tiny tests (test_encoder_upstream_features*.py), for each of the 15
families, with random weights at the real size (ViT-L, SigLIP-400M at 896 px for MedGemma,
CLIP-L/14-336 with a 4096-wide projector for LLaVA-Med, ...) and no download: the authors'
pipeline against ``build(name, weights_path=...)`` (the real-size card), on the four image
kinds; max abs difference <= 1e-4 in float32. Run with ``pytest -m slow``; it takes minutes
(docs/encoders.md lists the runtime per family).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from encoder_images import KINDS, TOL, images, max_abs_diff
from test_encoder_upstream_features import SQUASH
from test_encoder_upstream_features import upstream_of as general_upstream
from test_encoder_upstream_features_openclip import upstream_of as openclip_upstream
from test_encoder_upstream_features_specialist import BUILDERS, features

from crsbench.encoders import PAPER_FAMILIES, build, get_card


def _upstream(name: str, folder: Path) -> tuple[Path, Any, tuple[int, int]]:
    """``(weights_path, upstream pipeline, (h, w))`` at the true size."""
    if name in BUILDERS:
        return BUILDERS[name](folder, True)
    make = openclip_upstream if name in ("clip", "biomedclip") else general_upstream
    weights, upstream, side = make(name, folder, True)
    return weights, upstream, (side, side if name in SQUASH else side + 19)


@pytest.mark.slow
@pytest.mark.parametrize("name", PAPER_FAMILIES)
def test_true_size_feature_matches_the_upstream_pipeline(name: str, tmp_path: Path) -> None:
    torch.manual_seed(0)
    weights, upstream, (h, w) = _upstream(name, tmp_path / "up")
    enc = build(name, weights_path=weights)
    card = get_card(name)
    assert enc.input_size == card.input_size
    diffs = {}
    for kind in KINDS:
        mine, theirs = features(enc, upstream, name, images(h, w)[kind])
        assert mine.shape == theirs.shape == (1, card.embed_dim)
        assert float(theirs.abs().max()) > 1e-2  # a real feature, not zeros
        diffs[kind] = max_abs_diff(mine, theirs)
    assert max(diffs.values()) <= TOL, diffs
