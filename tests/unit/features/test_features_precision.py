"""The bf16 check: bf16 kept only where features and AUROC do not move; decisions cached."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from scipy.spatial.distance import cosine as scipy_cosine_distance

from crsbench.core.errors import ConfigError
from crsbench.evaluation import precision_check as pc
from crsbench.features import FeatureCache
from crsbench.features.precision import (
    MAX_AUROC_DELTA,
    MIN_ROW_COSINE,
    PrecisionCheck,
    decide,
)


def _pool_encoder(doubles):
    """Features are means of pixels: no autocast op on the path, so bf16 is exact."""

    class Pool(doubles.TinyEncoder):
        def forward_features(self, x, depths=(1.0,)):
            h = x.shape[2] // 2
            return {1.0: __import__("torch").cat([x.mean((2, 3)), x[:, :, :h].mean((2, 3))], 1)}

    return Pool()


def _cancel_encoder(doubles):
    """Difference of two convolutions with weights 0.1 % apart: bf16 rounding (2^-9) swamps it."""
    import torch

    class Cancel(doubles.TinyEncoder):
        def __init__(self):
            super().__init__()
            g = torch.Generator().manual_seed(7)
            self.a = torch.nn.Conv2d(3, 16, 8, stride=8)
            self.b = torch.nn.Conv2d(3, 16, 8, stride=8)
            w = torch.randn(self.a.weight.shape, generator=g)
            with torch.no_grad():
                self.a.weight.copy_(w)
                self.b.weight.copy_(w * (1 + 1e-3 * torch.randn(w.shape, generator=g)))
                self.a.bias.zero_()
                self.b.bias.zero_()
            self.weights_hash = "cancel-v1"

        def forward_features(self, x, depths=(1.0,)):
            return {1.0: (self.a(x) - self.b(x)).mean((2, 3)) * 100}

    return Cancel()


@pytest.fixture()
def batch(tmp_path, doubles):
    ids, paths = doubles.write_images(tmp_path / "imgs", 24)
    labels = np.array([i % 3 for i in range(24)])  # write_images darkens by i % 3
    return pc.ProbeBatch(ids, paths, labels, "multiclass", 3, "rev1")


@pytest.fixture()
def on_gpu_rules(monkeypatch):
    """Let ``auto`` consider bf16 on this CPU, as it does on CUDA."""
    monkeypatch.setattr(pc, "bf16_candidate", lambda device_type: True)


def _quiet(fn, *a, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # emulated bf16 on some CPUs
        return fn(*a, **kw)


def test_row_cosine_matches_scipy():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(6, 5)), rng.normal(size=(6, 5))
    want = [1 - scipy_cosine_distance(a[i], b[i]) for i in range(6)]
    np.testing.assert_allclose(pc.row_cosine(a, b), want, rtol=1e-12)
    z = np.zeros((1, 5))
    assert pc.row_cosine(z, z)[0] == 1.0 and pc.row_cosine(z, a[:1])[0] == 0.0


@pytest.mark.parametrize(
    ("cos", "a32", "a16", "precision", "criteria"),
    [
        (0.9995, 0.800, 0.8015, "bf16", "cosine+auroc"),  # both within: bf16 kept
        (0.9985, 0.800, 0.800, "fp32", "cosine+auroc"),  # cosine 0.9985 < 0.999
        (0.9999, 0.800, 0.8025, "fp32", "cosine+auroc"),  # |dAUROC| 0.0025 > 0.002
        (0.9995, None, None, "fp32", "cosine"),  # no AUROC: bf16 is not shown safe, fp32
    ],
)
def test_decision_rule(cos, a32, a16, precision, criteria):
    fig = {"min_cosine": cos, "auroc_fp32": a32, "auroc_bf16": a16, "n_images": 64}
    if a32 is None:
        fig["auroc_problem"] = "single class in the probe batch"
    d = decide("auto", fig, PrecisionCheck())
    assert (d.precision, d.criteria, d.checked) == (precision, criteria, True)
    assert d.passed is (precision == "bf16")
    assert d.thresholds == {"min_cosine": MIN_ROW_COSINE, "max_auroc_delta": MAX_AUROC_DELTA}
    if a32 is None:
        assert d.auroc_delta is None and "single class" in d.reason
    else:
        assert d.auroc_delta == pytest.approx(abs(a16 - a32))
    forced = decide("bf16", fig, PrecisionCheck())  # forced: kept, figures recorded all the same
    assert forced.precision == "bf16" and forced.passed is d.passed and "forced" in forced.reason


def test_thresholds_come_from_the_config_when_overridden():
    check = PrecisionCheck.from_overrides({"min_cosine": 0.99, "max_auroc_delta": None})
    assert check == PrecisionCheck(min_cosine=0.99, max_auroc_delta=MAX_AUROC_DELTA)
    fig = {"min_cosine": 0.995, "auroc_fp32": 0.8, "auroc_bf16": 0.8, "n_images": 64}
    assert decide("auto", fig, check).precision == "bf16"
    assert decide("auto", fig, PrecisionCheck()).precision == "fp32"


def test_exact_bf16_encoder_is_accepted(tmp_path, doubles, batch, on_gpu_rules):
    d = _quiet(pc.decide_precision, "auto", _pool_encoder(doubles), batch,
               FeatureCache(tmp_path / "c"))  # fmt: skip
    assert (d.precision, d.checked, d.passed, d.criteria) == ("bf16", True, True, "cosine+auroc")
    assert d.min_cosine == pytest.approx(1.0, abs=1e-12) and d.auroc_delta == 0.0
    assert d.n_images == 24 and d.auroc_fp32 == d.auroc_bf16


def test_bf16_that_moves_features_is_refused(tmp_path, doubles, batch, on_gpu_rules):
    d = _quiet(pc.decide_precision, "auto", _cancel_encoder(doubles), batch,
               FeatureCache(tmp_path / "c"))  # fmt: skip
    assert (d.precision, d.checked, d.passed) == ("fp32", True, False)
    assert d.min_cosine < MIN_ROW_COSINE and "bf16 fails the check: fp32" in d.reason
    with pytest.warns(RuntimeWarning, match="bf16' forced for tiny_test_cnn"):
        forced = pc.decide_precision("bf16", _cancel_encoder(doubles), batch,
                                     FeatureCache(tmp_path / "c"))  # fmt: skip
    assert forced.precision == "bf16" and forced.passed is False
    assert forced.min_cosine == d.min_cosine  # the cached figures, not a second measurement


def test_figures_are_cached_and_recomputed_for_new_weights(tmp_path, doubles, batch,
                                                           on_gpu_rules, monkeypatch):  # fmt: skip
    cache = FeatureCache(tmp_path / "c")
    enc = _pool_encoder(doubles)
    first = _quiet(pc.decide_precision, "auto", enc, batch, cache)
    files = list((tmp_path / "c" / "precision").glob("*.json"))
    assert len(files) == 1
    record = json.loads(files[0].read_text())
    assert record["parts"]["weights_hash"] == enc.weights_hash
    assert record["parts"]["device"].startswith("cpu:")

    calls = []
    real = pc.measure
    monkeypatch.setattr(pc, "measure", lambda *a: calls.append(1) or real(*a))
    again = pc.decide_precision("auto", enc, batch, cache)
    assert again == first and not calls  # reused, not measured
    enc.weights_hash = "other-weights"
    _quiet(pc.decide_precision, "auto", enc, batch, cache)
    assert calls == [1] and len(list((tmp_path / "c" / "precision").glob("*.json"))) == 2


def test_auto_on_cpu_never_takes_bf16_and_runs_no_check(tmp_path, doubles, batch, monkeypatch):
    from crsbench.features import precision

    monkeypatch.setattr(precision, "cpu_has_native_bf16", lambda: True)
    monkeypatch.setattr(pc, "measure", lambda *a: pytest.fail("no check on CPU under auto"))
    d = pc.decide_precision("auto", _pool_encoder(doubles), batch, FeatureCache(tmp_path / "c"))
    assert (d.precision, d.checked, d.passed, d.criteria) == ("fp32", False, None, "none")
    assert "not considered on cpu" in d.reason
    fp32 = pc.decide_precision("fp32", _pool_encoder(doubles), batch, FeatureCache(tmp_path))
    assert (fp32.precision, fp32.checked) == ("fp32", False)
    with pytest.raises(ConfigError, match="Got 'fp16'"):
        pc.decide_precision("fp16", _pool_encoder(doubles), batch, FeatureCache(tmp_path))


def test_auto_without_a_probe_batch_is_fp32(tmp_path, doubles, on_gpu_rules):
    d = pc.decide_precision("auto", _pool_encoder(doubles), None, FeatureCache(tmp_path))
    assert (d.precision, d.checked) == ("fp32", False) and "no probe batch" in d.reason


def test_single_class_batch_falls_back_to_the_cosine(tmp_path, doubles, batch, on_gpu_rules):
    one = pc.ProbeBatch(batch.image_ids, batch.paths, np.zeros(24, int), "multiclass", 3, "rev1")
    d = _quiet(pc.decide_precision, "auto", _pool_encoder(doubles), one,
               FeatureCache(tmp_path / "c"))  # fmt: skip
    # both criteria are required: with no AUROC on the batch bf16 is not shown safe
    assert (d.precision, d.criteria, d.auroc_delta) == ("fp32", "cosine", None)
    assert "single class in the probe batch (1 in the fitting half, 1 in the evaluation half)" in (
        d.reason
    )


def test_the_worst_condition_decides(batch, monkeypatch):
    """Clean features identical, a perturbed condition moved: the check sees the perturbed one."""
    from types import SimpleNamespace

    conds = (("clean", 0), ("jpeg", 3))
    cond_batch = pc.ProbeBatch(batch.image_ids, batch.paths, batch.labels, "multiclass", 3,
                               "rev1", conditions=conds)  # fmt: skip
    rng = np.random.default_rng(0)
    x = rng.normal(size=(24, 4)) + np.eye(3)[batch.labels] @ rng.normal(size=(3, 4)) * 3
    moved = x.copy()
    moved[1::2] = rng.normal(size=(12, 4))  # the evaluation rows lose their signal

    def fake(encoder, b, cache, precision):
        perturbed = x if precision == "fp32" else moved
        fa = {c: SimpleNamespace(features=f, ids=np.array(b.image_ids))
              for c, f in zip(conds, (x, perturbed), strict=True)}  # fmt: skip
        return fa

    monkeypatch.setattr(pc, "_extract", fake)
    fig = pc.measure(None, cond_batch, None)
    assert fig["min_cosine"] == pytest.approx(pc.row_cosine(x, moved).min())
    assert fig["auroc_condition"] == ["jpeg", 3] and fig["auroc_fp32"] != fig["auroc_bf16"]
    d = decide("auto", fig, PrecisionCheck())
    assert d.precision == "fp32" and d.auroc_delta > MAX_AUROC_DELTA


def test_auroc_step_is_the_change_one_swapped_pair_makes():
    from crsbench.metrics import macro_auroc

    assert pc.auroc_step(np.array([0, 0, 1, 1, 1]), "multiclass") == pytest.approx(1 / 12)
    y = np.array([[1, 0], [0, 1], [1, np.nan], [0, 0]])
    assert pc.auroc_step(y, "multilabel") == pytest.approx(1 / 8)  # col 0: 2 x 2 pairs, K = 2
    s = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.5], [0.5, 0.2]])  # both columns ranked right
    swapped = s.copy()
    swapped[[2, 3], 0] = swapped[[3, 2], 0]  # one (positive, negative) pair of column 0 swapped
    diff = macro_auroc(y, s, "multilabel") - macro_auroc(y, swapped, "multilabel")
    assert diff == pytest.approx(pc.auroc_step(y, "multilabel"))
    fig = {"min_cosine": 1.0, "auroc_fp32": 0.8, "auroc_bf16": 0.8, "n_images": 8,
           "auroc_step": 0.004}  # fmt: skip
    assert "requires identical rankings" in decide("auto", fig, PrecisionCheck()).reason
