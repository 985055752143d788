"""CPU convolutional encoders read channels-last input: same features, same weights' bytes."""

from __future__ import annotations

import pytest
import torch

from crsbench.encoders import build
from crsbench.encoders.base import prefers_channels_last


@pytest.mark.parametrize("name", ["random_cnn", "efficientnet_lite0_imagenet", "random_vit"])
def test_channels_last_input_gives_the_contiguous_features(name: str) -> None:
    enc = build(name, pretrained=False, device="cpu", tiny=True)
    assert enc._channels_last  # a Conv2d on the CPU (the ViT's patch embedding is one)
    x = enc.preprocess(torch.randint(0, 256, (6, 3, 40, 40), dtype=torch.uint8))
    got = enc.forward_features(x, (0.5, 1.0))
    enc._channels_last = False
    want = enc.forward_features(x, (0.5, 1.0))
    for d in want:
        torch.testing.assert_close(got[d], want[d], rtol=1e-5, atol=1e-5)
    assert all(p.is_contiguous() for p in enc.module.parameters())  # weights left as they were


def test_only_convolutional_networks_on_the_cpu_prefer_it() -> None:
    conv = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3))
    assert prefers_channels_last(conv, torch.device("cpu"))
    assert not prefers_channels_last(conv, torch.device("cuda"))
    assert not prefers_channels_last(
        torch.nn.Sequential(torch.nn.Linear(3, 4)), torch.device("cpu")
    )
