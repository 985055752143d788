"""The working resolution: every encoder receives the same degraded image, perturbed once at
the run's working size W before the encoder's own preprocessing (docs/perturbations.md)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from PIL import Image

from crsbench.core.errors import ConfigError
from crsbench.core.types import Condition
from crsbench.features import ExtractSettings, FeatureCache, extract
from crsbench.features import engine as engine_mod
from crsbench.features.loader import DecodeSet, resolve_perturb
from crsbench.features.resolution import MIN_WORKING_SIZE, working_size


def test_working_size_rule_hand_values():
    assert MIN_WORKING_SIZE == 224
    assert working_size([224]) == 224
    assert working_size([64, 96]) == 224  # the floor
    assert working_size([224, 448, 336]) == 448  # the largest input of the run
    assert working_size([224, 896], pinned=1024) == 1024
    assert working_size([32], pinned=32) == 32  # a pin may sit below the floor
    with pytest.raises(ConfigError, match=r"perturbations\.working_size must be an int no "
                       r"smaller than .* \(448 px\).*Got 224 instead"):  # fmt: skip
        working_size([224, 448], pinned=224, key="perturbations.working_size")
    with pytest.raises(ConfigError, match="positive"):
        working_size([])


def _textured(path, h: int = 500, w: int = 600, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    base = 128 + 80 * np.sin(xx / 23.0 + seed) * np.cos(yy / 31.0)
    img = np.stack([base, base[::-1], base[:, ::-1]], -1) + rng.normal(0, 6, (h, w, 3))
    Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(path)
    return str(path)


def _sha(t) -> str:
    return hashlib.sha256(np.ascontiguousarray(t.numpy()).tobytes()).hexdigest()


def test_two_encoders_of_different_sizes_receive_identical_degraded_images(tmp_path):
    encoders = pytest.importorskip("crsbench.encoders")
    paths = [_textured(tmp_path / f"im{i}.png", seed=i) for i in range(3)]
    ids = [f"img{i}" for i in range(3)]
    conds = [("clean", 0), ("rician", 2), ("jpeg", 3)]
    w = 448
    seen: dict[int, list[str]] = {}
    out_sizes: dict[int, set] = {}
    for size in (224, 448):
        enc = encoders.build("pixel").set_input_size(size)  # area-pooled pixels: cheap
        real = enc.preprocess

        def hooked(x, real=real, size=size):  # record what the encoder's preprocessing gets
            assert tuple(x.shape[-2:]) == (w, w)
            seen.setdefault(size, []).extend(_sha(im) for im in x)
            y = real(x)
            out_sizes.setdefault(size, set()).add(tuple(y.shape[-2:]))
            return y

        enc.preprocess = hooked
        settings = ExtractSettings(conditions=conds, num_workers=0, progress=False, working_size=w)
        extract(enc, ids, paths, cache=FeatureCache(tmp_path / f"c{size}"), dataset_revision="r",
                settings=settings)  # fmt: skip
    assert out_sizes == {224: {(224, 224)}, 448: {(448, 448)}}
    ref = DecodeSet(paths, ids, w, [Condition(*c) for c in conds], resolve_perturb(None)[0])
    import torch

    want = sorted(_sha(torch.from_numpy(im)) for r in range(3) for im in ref[r][1])
    assert len(want) == 9 and len(set(want)) == 9
    assert sorted(seen[224]) == want  # each encoder got exactly the reference degraded images
    assert sorted(seen[448]) == want


def _view_224(x):
    import torch.nn.functional as F

    if x.shape[-1] == 224:
        return x
    return F.interpolate(x, size=(224, 224), mode="bilinear", antialias=True, align_corners=False)


def _rician_change_at_224(path, decode_size: int, input_size: int) -> float:
    """Mean |rician@2 - clean| in grey levels, both through an encoder preprocessing of side
    ``input_size``, viewed at 224 px, the image decoded and perturbed at ``decode_size``."""
    import torch

    from crsbench.encoders.preprocess import Preprocessing, preprocess

    conds = [Condition("clean", 0), Condition("rician", 2)]
    stack = DecodeSet([path], ["img0"], decode_size, conds, resolve_perturb(None)[0])[0][1]
    # the random_cnn card's rule (bilinear, crop_pct 1), without the mean/std normalisation;
    # a crop_pct < 1 makes the 448-px encoder upsample W before cropping, whose smoothing of
    # the noise is the encoder's own preprocessing, not the perturbation's strength
    pre = Preprocessing(input_size=input_size, interpolation="bilinear", resize_mode="crop",
                        crop_pct=1.0, mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0))  # fmt: skip
    x = _view_224(preprocess(torch.from_numpy(stack), pre))
    return float((x[1] - x[0]).abs().mean()) * 255.0


def test_perturbation_strength_no_longer_depends_on_encoder_input_size(tmp_path):
    path = _textured(tmp_path / "src.png")
    now = {s: _rician_change_at_224(path, 448, s) for s in (224, 448)}
    assert now[224] == pytest.approx(now[448], rel=0.1)
    # the old rule (perturb after resizing to each encoder's size) fails the same check
    old = {s: _rician_change_at_224(path, s, s) for s in (224, 448)}
    assert old[224] > 1.8 * old[448]
    assert now[224] == pytest.approx(old[448], rel=0.1)  # both see the noise made at 448


def test_the_resolution_policy_and_the_working_size_are_in_the_key(
    tmp_path, doubles, images, monkeypatch
):
    ids, paths = images
    base = doubles.run_extract(ids, paths, tmp_path / "c")[(("clean", 0), 1.0)]
    monkeypatch.setattr(engine_mod, "PERTURB_RESOLUTION_POLICY", "perturb-res-v0")
    other = doubles.run_extract(ids, paths, tmp_path / "c")[(("clean", 0), 1.0)]
    assert other.status == "computed" and other.key != base.key
    monkeypatch.undo()
    again = doubles.run_extract(ids, paths, tmp_path / "c")[(("clean", 0), 1.0)]
    assert again.status == "hit" and again.key == base.key


def test_a_working_size_below_the_encoder_input_is_refused(tmp_path, doubles, images):
    ids, paths = images
    with pytest.raises(ConfigError, match=r"working_size must be .*\(32 px\).*Got 24 instead"):
        doubles.run_extract(ids, paths, tmp_path / "c", working_size=24)


def test_default_working_size_is_the_floor_for_a_small_encoder(tmp_path, doubles, images):
    ids, paths = images
    got = []
    enc = doubles.TinyEncoder()
    real = enc.preprocess
    enc.preprocess = lambda x: (got.append(tuple(x.shape[-2:])), real(x))[1]
    doubles.run_extract(ids, paths, tmp_path / "c", encoder=enc, working_size=None)
    assert set(got) == {(224, 224)}


def test_run_working_size_of_the_shipped_configs(monkeypatch, tmp_path):
    from crsbench.config import load_config, packaged_config_path
    from crsbench.runs.extract_cell import run_working_size

    monkeypatch.setenv("CRSBENCH_DATA", str(tmp_path))
    paper = load_config(packaged_config_path("paper"))
    assert paper.perturbations.working_size == 896 == run_working_size(paper)
    demo = load_config(packaged_config_path("demo"))
    assert demo.perturbations.working_size == 64 == run_working_size(demo)  # every input 64
    unpinned = demo.model_copy(update={"perturbations": demo.perturbations.model_copy(
        update={"working_size": None})})  # fmt: skip
    assert run_working_size(unpinned) == 224  # the floor
    pinned = demo.model_copy(update={"perturbations": demo.perturbations.model_copy(
        update={"working_size": 48})})  # fmt: skip
    with pytest.raises(ConfigError, match=r"perturbations\.working_size .*\(64 px\)"):
        run_working_size(pinned)
