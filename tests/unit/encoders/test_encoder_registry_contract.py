"""Contract test over the whole encoder registry (tiny random configs, no download)."""

from __future__ import annotations

import pytest
import torch

from crsbench.core.errors import EncoderError, RegistryError
from crsbench.encoders import ENCODERS, PAPER_FAMILIES, build, get_card, tap_index
from crsbench.protocol import LAYER_DEPTHS

ALL = ENCODERS.names()


def test_registry_holds_all_15_paper_families_and_baselines() -> None:
    families = {get_card(n).family for n in PAPER_FAMILIES}
    assert len(PAPER_FAMILIES) == 15
    assert families == {
        "ResNet-50",
        "ViT-B/16",
        "CLIP",
        "SigLIP",
        "DINOv2",
        "MAE",
        "BiomedCLIP",
        "LLaVA-Med vision tower",
        "MedSigLIP",
        "MedGemma vision encoder",
        "PanDerm",
        "RETFound",
        "RAD-DINO",
        "BioViL",
        "CheXzero",
    }
    groups = {n: get_card(n).family_group for n in ALL}
    assert sum(g == "general" for g in groups.values()) == 6
    assert sum(g == "medical" for g in groups.values()) == 4
    assert sum(g == "specialist" for g in groups.values()) == 5
    assert {"pixel", "random_cnn", "efficientnet_lite0_imagenet"} <= set(ALL)
    assert {get_card(n).domain for n in ALL if groups[n] == "specialist"} == {
        "dermoscopy",
        "fundus",
        "chest_xray",
    }


def test_unknown_name_suggests() -> None:
    with pytest.raises(RegistryError, match="Did you mean: vit_b16"):
        get_card("vit_b61")


def test_tap_index_rule() -> None:
    assert [tap_index(d, 12) for d in LAYER_DEPTHS] == [2, 5, 8, 11]
    assert [tap_index(d, 24) for d in LAYER_DEPTHS] == [5, 11, 17, 23]
    assert [tap_index(d, 27) for d in LAYER_DEPTHS] == [6, 13, 19, 26]
    assert [tap_index(d, 4) for d in LAYER_DEPTHS] == [0, 1, 2, 3]


@pytest.mark.parametrize("name", ALL)
def test_tiny_build_contract(name: str) -> None:
    enc = build(name, tiny=True, pretrained=False)
    card = enc.card
    assert not enc.module.training
    assert all(not p.requires_grad for p in enc.module.parameters())
    channels = 1 if card.domain == "chest_xray" else 3
    images = torch.randint(
        0, 256, (3, channels, 45, 61), dtype=torch.uint8, generator=torch.Generator().manual_seed(0)
    )
    x = enc.preprocess(images)
    assert x.shape == (3, 3, enc.input_size, enc.input_size) and x.dtype == torch.float32

    calls = {"module": 0, "first_block": 0}
    h1 = enc.module.register_forward_hook(
        lambda *a: calls.__setitem__("module", calls["module"] + 1)
    )
    h2 = enc._blocks[0].register_forward_hook(
        lambda *a: calls.__setitem__("first_block", calls["first_block"] + 1)
    )
    try:
        feats = enc.forward_features(x, LAYER_DEPTHS)
    finally:
        h1.remove()
        h2.remove()
    assert calls == {"module": 1, "first_block": 1}, "all four taps must come from one pass"
    assert set(feats) == set(LAYER_DEPTHS)
    for d, f in feats.items():
        assert f.dtype == torch.float32 and f.shape[0] == 3
        assert torch.isfinite(f).all()
        assert f.shape[1] == enc.tap_dims[d]
    assert feats[1.0].shape[1] == enc.embed_dim
    # distinct images give distinct embeddings (no constant-output encoder)
    assert not torch.allclose(feats[1.0][0], feats[1.0][1])
    # depth 1.0 alone equals the 1.0 entry of the full sweep, and equals module(x)
    alone = enc.forward_features(x)[1.0]
    torch.testing.assert_close(alone, feats[1.0])
    with torch.inference_mode():
        torch.testing.assert_close(enc.module(x).float(), feats[1.0])


@pytest.mark.parametrize("name", ["vit_b16", "resnet50", "siglip", "clip"])
def test_tiny_builds_are_deterministic_and_hashed(name: str) -> None:
    a, b = build(name, tiny=True, pretrained=False), build(name, tiny=True, pretrained=False)
    assert a.weights_hash == b.weights_hash and len(a.weights_hash) == 64
    assert a.preprocess_hash == b.preprocess_hash
    with torch.no_grad():
        next(iter(b.module.parameters())).add_(1.0)
    b._weights_hash = None
    assert a.weights_hash != b.weights_hash


def test_depth_validation() -> None:
    enc = build("pixel")
    x = enc.preprocess(torch.zeros(1, 3, 8, 8, dtype=torch.uint8))
    with pytest.raises(EncoderError, match="depths must be"):
        enc.forward_features(x, (0.3,))
    with pytest.raises(EncoderError, match="depths must be"):
        enc.forward_features(x, ())


def test_pixel_baseline_is_area_downsampling() -> None:
    enc = build("pixel")
    img = torch.randint(0, 256, (2, 3, 64, 64), dtype=torch.uint8)
    feats = enc.forward_features(enc.preprocess(img), LAYER_DEPTHS)
    assert {d: f.shape[1] for d, f in feats.items()} == {0.25: 12, 0.5: 48, 0.75: 192, 1.0: 768}
    ref = ((img.float() / 255 - 0.5) / 0.25).reshape(2, 3, 2, 32, 2, 32).mean(dim=(3, 5))
    torch.testing.assert_close(feats[0.25], ref.flatten(1), atol=1e-5, rtol=1e-5)


def test_cards_are_complete() -> None:
    for name in ALL:
        card = get_card(name)
        assert card.embed_dim > 0 and card.input_size > 0 and card.licence and card.layer_taps
        assert len(card.mean) == 3 and len(card.std) == 3 and min(card.std) > 0
        if card.family_group != "baseline":
            assert card.lora_targets, name
        assert card.as_dict()["name"] == name


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [
        n
        for n in ALL
        if n not in ("medgemma", "siglip", "medsiglip", "llava_med", "panderm", "retfound")
    ],
)
def test_full_size_random_build_matches_card_dim(name: str) -> None:
    enc = build(name, pretrained=False)
    assert enc.embed_dim == enc.card.embed_dim
    assert enc.input_size == enc.card.input_size


@pytest.mark.parametrize("name", PAPER_FAMILIES)
def test_crop_rounding_is_the_upstream_libraries(name: str) -> None:
    """The transformers families crop as transformers' ``center_crop`` (floor); the others
    come with torchvision transforms (timm, open_clip, the authors' own code), whose
    ``CenterCrop`` rounds half to even; the upstream-feature tests pin both on odd margins."""
    card = get_card(name)
    expected = "floor" if card.backend == "transformers" else "half_even"
    assert card.crop_rounding == expected
