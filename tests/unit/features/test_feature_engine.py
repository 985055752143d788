"""Extraction engine: single decode pass, row order, quarantine, sanity gates, workers."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from PIL import Image

from crsbench.core.errors import ConfigError, DataError
from crsbench.features import ExtractSettings, FeatureCache, decode, extract
from crsbench.features.results import as_condition


def test_all_conditions_from_one_decode_per_image(tmp_path, doubles, images, monkeypatch):
    ids, paths = images
    calls: list[str] = []
    real = decode.decode_image
    monkeypatch.setattr(
        decode, "decode_image", lambda p, s, b=None: (calls.append(str(p)), real(p, s, b))[1]
    )
    conds = [("clean", 0), ("noise", 1), ("noise", 2), ("noise", 3)]
    res = doubles.run_extract(
        ids, paths, tmp_path / "c", conditions=conds, depths=(0.25, 0.5, 0.75, 1.0)
    )
    assert sorted(calls) == sorted(paths)  # each image decoded exactly once
    assert len(res) == 16
    enc = doubles.TinyEncoder()
    for (_, depth), fa in res.items():
        assert fa.features.shape == (10, enc.tap_dims[depth])
    clean = np.asarray(res[(("clean", 0), 1.0)].features)
    for sev in (1, 2, 3):
        assert not np.array_equal(clean, res[(("noise", sev), 1.0)].features)


def test_perturbed_depths_limit_what_is_stored_not_what_is_decoded(
    tmp_path, doubles, images, monkeypatch
):
    ids, paths = images
    calls: list[str] = []
    real = decode.decode_image
    monkeypatch.setattr(
        decode, "decode_image", lambda p, s, b=None: (calls.append(str(p)), real(p, s, b))[1]
    )
    conds = [("clean", 0), ("noise", 1), ("noise", 3)]
    depths = (0.5, 1.0)
    res = doubles.run_extract(
        ids, paths, tmp_path / "c", conditions=conds, depths=depths, perturbed_depths=(1.0,)
    )
    assert sorted(calls) == sorted(paths)
    assert sorted(res) == [
        (("clean", 0), 0.5), (("clean", 0), 1.0), (("noise", 1), 1.0), (("noise", 3), 1.0)
    ]  # fmt: skip
    full = doubles.run_extract(ids, paths, tmp_path / "d", conditions=conds, depths=depths)
    for key, fa in res.items():
        np.testing.assert_array_equal(fa.features, full[key].features)
    with pytest.raises(ConfigError, match=r"perturbed_depths must be a non-empty subset"):
        doubles.run_extract(ids, paths, tmp_path / "e", conditions=conds, depths=depths,
                            perturbed_depths=(0.25,))  # fmt: skip


def test_cpu_forward_chunks_are_capped_by_pixels_cuda_ones_are_not():
    from crsbench.features.runner import CPU_FORWARD_PIXELS, forward_chunk

    assert forward_chunk(64, 224, on_cuda=False) == 8
    assert forward_chunk(64, 96, on_cuda=False) == CPU_FORWARD_PIXELS // 96**2 == 43
    assert forward_chunk(4, 96, on_cuda=False) == 4
    assert forward_chunk(64, 1024, on_cuda=False) == 1
    assert forward_chunk(64, 224, on_cuda=True) == 64


def test_cpu_decode_tasks_fill_one_forward_chunk_cuda_ones_hold_a_batch():
    from crsbench.features.runner import loader_batch

    assert loader_batch(64, 8, 16, on_cuda=False) == 1  # 16 conditions: one image a task
    assert loader_batch(64, 8, 1, on_cuda=False) == 8  # clean only: a chunk of images
    assert loader_batch(64, 43, 4, on_cuda=False) == 10
    assert loader_batch(4, 43, 1, on_cuda=False) == 4  # never more than batch_size
    assert loader_batch(64, 8, 16, on_cuda=True) == 64


def test_perturbed_rows_match_a_direct_per_image_computation(tmp_path, doubles, images):
    import torch

    ids, paths = images
    res = doubles.run_extract(ids, paths, tmp_path / "c", conditions=[("noise", 2)])
    enc = doubles.TinyEncoder()
    img = decode.decode_image(paths[3], 32)
    pert = doubles.toy_perturb(img, "noise", 2, ids[3])
    x = torch.from_numpy(decode.to_rgb_chw(pert))[None]
    with torch.inference_mode():
        want = enc.forward_features(enc.preprocess(x))[1.0].numpy()[0]
    np.testing.assert_allclose(res[(("noise", 2), 1.0)].features[3], want, rtol=1e-5, atol=1e-5)


def test_rows_follow_the_requested_order(tmp_path, doubles, images):
    ids, paths = images
    fwd = doubles.run_extract(ids, paths, tmp_path / "a")[(("clean", 0), 1.0)]
    rev = doubles.run_extract(ids[::-1], paths[::-1], tmp_path / "b")[(("clean", 0), 1.0)]
    assert list(rev.ids) == ids[::-1]
    np.testing.assert_allclose(rev.features, np.asarray(fwd.features)[::-1], rtol=1e-5, atol=1e-6)


def test_duplicate_ids_abort_early(tmp_path, doubles, images):
    ids, paths = images
    with pytest.raises(DataError, match=r"unique.*'id0001' \(rows 2 and 11\)"):
        doubles.run_extract([*ids, ids[1]], [*paths, paths[1]], tmp_path / "c")


def test_bad_images_skipped_recorded_and_threshold_enforced(tmp_path, doubles, images):
    ids, paths = images
    bad = tmp_path / "bad"
    bad.mkdir()
    good_png = bad / "good.png"
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (40, 40, 3), np.uint8)).save(good_png)
    (bad / "zero.jpg").write_bytes(b"")
    (bad / "page.jpg").write_text("<html>nope</html>")
    (bad / "cut.png").write_bytes(good_png.read_bytes()[:200])
    extra = ["zero.jpg", "page.jpg", "cut.png"]
    all_ids = ids + [f"bad_{n}" for n in extra]
    all_paths = paths + [str(bad / n) for n in extra]
    with pytest.raises(DataError, match=r"at most 1\.0% of 13\. Got 3"):
        doubles.run_extract(all_ids, all_paths, tmp_path / "c")
    res = doubles.run_extract(all_ids, all_paths, tmp_path / "c", max_bad_fraction=0.5)
    fa = res[(("clean", 0), 1.0)]
    assert list(fa.ids) == ids
    assert [(q["row"], q["error_class"]) for q in res.quarantined] == [
        (11, "empty_file"),
        (12, "not_an_image"),
        (13, "truncated"),
    ]
    again = doubles.run_extract(all_ids, all_paths, tmp_path / "c", max_bad_fraction=0.5)
    assert again.n_decoded == 0 and again.quarantined == res.quarantined
    ledger = FeatureCache(tmp_path / "c").read_quarantine()
    assert {r["path"] for r in ledger} == {str(bad / n) for n in extra}
    lines = (tmp_path / "c" / "quarantine.jsonl").read_text().splitlines()
    assert all(json.loads(x)["dataset_revision"] == "rev1" for x in lines)
    ref = doubles.run_extract(ids, paths, tmp_path / "ref")[(("clean", 0), 1.0)]
    np.testing.assert_array_equal(np.asarray(ref.features), np.asarray(fa.features))


def test_constant_images_fail_the_sanity_gate(tmp_path, doubles):
    paths = []
    for i in range(6):
        p = tmp_path / f"c{i}.png"
        Image.fromarray(np.full((40, 40, 3), 128, np.uint8)).save(p)
        paths.append(str(p))
    with pytest.raises(DataError, match="must differ between images"):
        doubles.run_extract([f"i{i}" for i in range(6)], paths, tmp_path / "c")


def test_worker_processes_give_identical_bytes(tmp_path, doubles, images):
    ids, paths = images
    conds = [("clean", 0), ("noise", 3)]
    a = doubles.run_extract(ids, paths, tmp_path / "a", conditions=conds)
    b = doubles.run_extract(ids, paths, tmp_path / "b", conditions=conds, num_workers=2)
    for k in a:
        assert np.asarray(a[k].features).tobytes() == np.asarray(b[k].features).tobytes()


def test_mixed_modes_dataset(tmp_path, doubles):
    rng = np.random.default_rng(5)
    specs = {
        "l.png": Image.fromarray(rng.integers(0, 256, (40, 40), dtype=np.uint8)),
        "rgba.png": Image.fromarray(rng.integers(0, 256, (40, 40, 4), dtype=np.uint8), "RGBA"),
        "p.png": Image.fromarray(rng.integers(0, 256, (40, 40, 3), dtype=np.uint8)).convert("P"),
        "i16.png": Image.fromarray(rng.integers(0, 4096, (40, 40), dtype=np.uint16)),
        "cmyk.jpg": Image.new("CMYK", (40, 40), (10, 200, 30, 5)),
    }
    paths = []
    for name, im in specs.items():
        im.save(tmp_path / name)
        paths.append(str(tmp_path / name))
    res = doubles.run_extract(
        list(specs), paths, tmp_path / "c", conditions=[("clean", 0), ("noise", 1)]
    )
    fa = res[(("noise", 1), 1.0)]
    assert fa.features.shape == (5, 10) and np.isfinite(fa.features).all()
    assert res.quarantined == []


def test_registry_encoder_and_real_perturbations(tmp_path, images):
    encoders = pytest.importorskip("crsbench.encoders")
    perturb = pytest.importorskip("crsbench.perturb")
    enc = encoders.build("random_cnn", tiny=True)
    ids, paths = images
    conds = [("clean", 0), *perturb.PAPER_CONDITIONS[2::5]]
    kw = dict(
        dataset_revision="r",
        settings=ExtractSettings(
            conditions=conds, num_workers=0, progress=False, depths=(0.5, 1.0)
        ),
    )
    res = extract(enc, ids, paths, cache=FeatureCache(tmp_path / "c"), **kw)
    for (_, depth), fa in res.items():
        assert fa.features.shape == (10, enc.tap_dims[depth])
        assert np.isfinite(fa.features).all()
    clean = np.asarray(res[(("clean", 0), 1.0)].features)
    for c in conds[1:]:
        assert not np.allclose(clean, res[(c, 1.0)].features)
    again = extract(enc, ids, paths, cache=FeatureCache(tmp_path / "c"), **kw)
    assert again.n_decoded == 0 and all(fa.status == "hit" for fa in again.values())


def test_precision_resolution_and_bf16_features(tmp_path, doubles, images, monkeypatch):
    from crsbench.features import engine, precision

    monkeypatch.setattr(precision, "cpu_has_native_bf16", lambda: True)
    # an unchecked auto is fp32 everywhere: bf16 only through the check (decide_precision)
    assert engine.resolve_precision("auto", on_cuda=False) == "fp32"
    assert engine.resolve_precision("auto", on_cuda=True) == "fp32"
    assert engine.resolve_precision("fp32", on_cuda=True) == "fp32"
    assert engine.resolve_precision("bf16", on_cuda=False) == "bf16"
    monkeypatch.setattr(precision, "cpu_has_native_bf16", lambda: False)
    with pytest.warns(RuntimeWarning, match="emulated"):
        assert engine.resolve_precision("bf16", on_cuda=False) == "bf16"
    with pytest.raises(ConfigError, match=r"precision must be one of .* Got 'fp16'"):
        engine.resolve_precision("fp16", on_cuda=False)

    ids, paths = images
    cache = tmp_path / "c"
    f32 = doubles.run_extract(ids, paths, cache)[("clean", 1.0)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # emulated on some CPUs: fine here
        b16 = doubles.run_extract(ids, paths, cache, precision="bf16")[("clean", 1.0)]
        again = doubles.run_extract(ids, paths, cache, precision="bf16")[("clean", 1.0)]
    assert again.status == "hit"
    assert b16.status == "computed" and b16.key != f32.key  # precision is part of the key
    a, b = np.asarray(f32.features, np.float64), np.asarray(b16.features, np.float64)
    assert b16.features.dtype == np.float32 and not np.array_equal(a, b)
    # bf16 keeps 8 mantissa bits: features agree to about 1 %, not bit for bit
    np.testing.assert_allclose(b, a, rtol=0.02, atol=0.02 * np.abs(a).max())


def test_a_changed_file_is_recomputed_not_served_stale(tmp_path, doubles, monkeypatch):
    """The key covers each file's size and mtime; only its shard is redone."""
    import os

    ids, paths = doubles.write_images(tmp_path / "imgs", 10)
    first = doubles.run_extract(ids, paths, tmp_path / "c")[("clean", 1.0)]
    arr = np.asarray(Image.open(paths[5]))
    Image.fromarray(255 - arr).save(paths[5])  # new content, same name
    st = os.stat(paths[5])
    os.utime(paths[5], ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    calls: list[str] = []
    real = decode.decode_image
    monkeypatch.setattr(
        decode, "decode_image", lambda p, s, b=None: (calls.append(str(p)), real(p, s, b))[1]
    )
    second = doubles.run_extract(ids, paths, tmp_path / "c")[("clean", 1.0)]
    assert second.status == "computed" and second.key != first.key
    assert sorted(calls) == sorted(paths[4:8])  # shard_size 4: only the shard holding row 5
    changed = [i for i in range(10) if not np.array_equal(first.features[i], second.features[i])]
    assert changed == [5]


def test_a_file_changing_during_extraction_is_quarantined(tmp_path, doubles, images):
    from crsbench.features.loader import DecodeSet, file_fingerprint

    ids, paths = images
    fps = [file_fingerprint(p) for p in paths]
    fps[2] = "123:456"  # what the planner saw is not what is on disk now
    ds = DecodeSet(paths, ids, 32, [as_condition("clean")], None, fps)
    row, stack, fail = ds[2]
    assert row == 2 and stack is None and fail["error_class"] == "changed"
    assert "123:456" in fail["message"] and "run again" in fail["message"]
    assert ds[3][1] is not None
    assert file_fingerprint(str(tmp_path / "nope.png")) == "missing"
