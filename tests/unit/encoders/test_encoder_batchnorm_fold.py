"""Conv → batch-norm folding: same features, checked, and always undone."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

torch = pytest.importorskip("torch")
timm = pytest.importorskip("timm")

from crsbench.encoders import build  # noqa: E402
from crsbench.encoders.fold import (  # noqa: E402
    FOLD_RTOL,
    batchnorm_folded,
    fold_pairs,
    foldable_pairs,
    unfold,
)
from crsbench.protocol import LAYER_DEPTHS  # noqa: E402


def _randomise_norms(module, seed: int = 0) -> None:
    """Non-trivial running statistics and affine terms (fresh norms are the identity)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                n = m.num_features
                m.running_mean.copy_(torch.randn(n, generator=g) * 0.5)
                m.running_var.copy_(torch.rand(n, generator=g) * 2 + 0.2)
                m.weight.copy_(torch.randn(n, generator=g) * 0.5 + 1)
                m.bias.copy_(torch.randn(n, generator=g) * 0.3)


def _snapshot(module) -> dict:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


@pytest.fixture()
def cnn():
    enc = build("random_cnn", tiny=True)
    _randomise_norms(enc.module)
    return enc


def test_folded_features_match_and_the_encoder_is_restored(cnn):
    x = torch.randn(
        3, 3, cnn.input_size, cnn.input_size, generator=torch.Generator().manual_seed(1)
    )
    ref = cnn.forward_features(x, LAYER_DEPTHS)
    before = _snapshot(cnn.module)
    hash_before = cnn.weights_hash
    n_norms = sum(isinstance(m, torch.nn.BatchNorm2d) for m in cnn.module.modules())
    with batchnorm_folded(cnn) as n:
        assert 0 < n <= n_norms
        left = sum(isinstance(m, torch.nn.BatchNorm2d) for m in cnn.module.modules())
        assert left == n_norms - n
        got = cnn.forward_features(x, LAYER_DEPTHS)
    for d in LAYER_DEPTHS:
        rel = (got[d] - ref[d]).abs().max() / ref[d].abs().max()
        assert float(rel) < 1e-5, (d, float(rel))
    after = _snapshot(cnn.module)
    assert after.keys() == before.keys()
    assert all(torch.equal(after[k], before[k]) for k in before)
    cnn._weights_hash = None  # recompute from the restored state dict
    assert cnn.weights_hash == hash_before
    assert sum(isinstance(m, torch.nn.BatchNorm2d) for m in cnn.module.modules()) == n_norms


def test_timm_batchnorm_act_is_folded_into_efficientnet_lite_convs():
    from timm.layers import BatchNormAct2d

    model = timm.create_model("tf_efficientnet_lite0", pretrained=False, num_classes=0).eval()
    _randomise_norms(model, seed=3)
    n_norms = sum(isinstance(m, BatchNormAct2d) for m in model.modules())
    x = torch.randn(2, 3, 96, 96, generator=torch.Generator().manual_seed(2))
    with torch.inference_mode():
        ref = model(x)
    pairs = foldable_pairs(model)
    assert len(pairs) == n_norms  # every norm of EfficientNet-Lite follows its conv
    done = fold_pairs(pairs)
    assert not any(isinstance(m, BatchNormAct2d) for m in model.modules())
    with torch.inference_mode():
        got = model(x)
    np.testing.assert_allclose(
        got.numpy(), ref.numpy(), rtol=0, atol=FOLD_RTOL * float(ref.abs().max())
    )
    unfold(done)
    assert sum(isinstance(m, BatchNormAct2d) for m in model.modules()) == n_norms
    with torch.inference_mode():
        assert torch.equal(model(x), ref)


class _NormFirst(torch.nn.Module):
    """Registers conv then norm, but runs the norm first: adjacency is not data flow."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 3, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(3)
        self.head = torch.nn.Conv2d(3, 4, 1)

    def forward(self, x):
        return self.head(torch.relu(self.conv(self.bn(x)))).mean((2, 3))


class _Double:
    """The parts of an Encoder that :func:`batchnorm_folded` uses."""

    def __init__(self, module) -> None:
        self.module = module.eval()
        self._blocks = [getattr(module, "head", module)]
        self.input_size = 16
        self.device = torch.device("cpu")

    def forward_features(self, x, depths):
        with torch.inference_mode():
            out = self.module(x)
        return {d: out for d in depths}


def test_a_fold_that_changes_the_features_is_refused_and_undone():
    net = _NormFirst()
    _randomise_norms(net, seed=5)
    enc = _Double(net)
    assert len(foldable_pairs(net)) == 1  # looks foldable from the registration order
    before = _snapshot(net)
    with batchnorm_folded(enc) as n:
        assert n == 0  # the probe check found different features
        assert isinstance(net.bn, torch.nn.BatchNorm2d)
    assert all(torch.equal(v, before[k]) for k, v in net.state_dict().items())
    assert FOLD_RTOL < 1e-2


def test_taps_training_mode_and_foreign_norms_are_left_alone():
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4))
    assert len(foldable_pairs(net)) == 1
    assert foldable_pairs(net, exclude=(net[1],)) == []  # a layer tap keeps its hooks
    net.train()
    enc = _Double(net)
    enc.module.train()
    with batchnorm_folded(enc) as n:
        assert n == 0  # batch statistics in training mode cannot be folded
    sync = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.SyncBatchNorm(4))
    assert foldable_pairs(sync) == []  # only the supported norm types
    no_stats = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4, track_running_stats=False)
    )
    assert foldable_pairs(no_stats) == []


def test_engine_folds_by_default_keys_it_and_leaves_the_encoder_untouched(tmp_path, cnn):
    from PIL import Image

    from crsbench.features import ExtractSettings, FeatureCache, extract

    rng = np.random.default_rng(0)
    ids, paths = [], []
    for i in range(6):
        p = tmp_path / f"im{i}.png"
        Image.fromarray(rng.integers(0, 255, (40, 48, 3), dtype=np.uint8)).save(p)
        ids.append(f"im{i}")
        paths.append(str(p))
    before = _snapshot(cnn.module)
    base = ExtractSettings(num_workers=0, progress=False, depths=LAYER_DEPTHS)
    folded = extract(cnn, ids, paths, cache=FeatureCache(tmp_path / "a"), dataset_revision="r",
                     settings=base)  # fmt: skip
    plain = extract(cnn, ids, paths, cache=FeatureCache(tmp_path / "b"), dataset_revision="r",
                    settings=replace(base, fold_batchnorm=False))  # fmt: skip
    assert all(torch.equal(v, before[k]) for k, v in cnn.module.state_dict().items())
    for key, fa in folded.arrays.items():
        other = plain.arrays[key]
        assert fa.key != other.key  # the fold enters the cache key
        a, b = np.asarray(fa.features), np.asarray(other.features)
        assert np.abs(a - b).max() <= 1e-5 * np.abs(b).max()


def test_an_encoder_whose_probe_forward_fails_runs_unfolded():
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4))
    enc = _Double(net)

    def broken(x, depths):
        raise RuntimeError("needs another input size")

    enc.forward_features = broken
    with batchnorm_folded(enc) as n:
        assert n == 0
        assert isinstance(net[1], torch.nn.BatchNorm2d)
