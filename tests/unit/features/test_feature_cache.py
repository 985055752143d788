"""Feature cache: hits, key sensitivity, corruption, NaN rejection."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest

import crsbench
from crsbench.core.errors import CacheError
from crsbench.features import FeatureCache
from crsbench.features.cache import make_key


def _file_bytes(fa):
    return np.asarray(fa.features).tobytes()


def test_hit_returns_identical_bytes_without_decoding(tmp_path, doubles, images):
    ids, paths = images
    first = doubles.run_extract(ids, paths, tmp_path / "c")
    again = doubles.run_extract(ids, paths, tmp_path / "c")
    k = (("clean", 0), 1.0)
    assert first[k].status == "computed" and again[k].status == "hit"
    assert again.n_decoded == 0
    assert _file_bytes(first[k]) == _file_bytes(again[k])
    assert list(again[k].ids) == ids


def test_make_key_is_order_independent_and_value_sensitive():
    a = make_key({"x": 1, "y": "b"})
    assert a == make_key({"y": "b", "x": 1})
    assert a != make_key({"x": 2, "y": "b"})


MUTATIONS = {
    "weights": lambda d, kw: kw.update(encoder=d.TinyEncoder(seed=1)),
    "encoder_name": lambda d, kw: kw.update(encoder=_renamed(d)),
    "preprocess": lambda d, kw: kw.update(encoder=_prep(d)),
    "dataset_revision": lambda d, kw: kw.update(dataset_revision="rev2"),
    "working_size": lambda d, kw: kw.update(working_size=48),
    "dtype": lambda d, kw: kw.update(dtype="float16"),
    "depth": lambda d, kw: kw.update(depths=(0.5,)),
}


def _renamed(d):
    e = d.TinyEncoder()
    e.card = d.TinyCard(name="other_name")
    return e


def _prep(d):
    e = d.TinyEncoder()
    e.preprocess_hash = "another"
    return e


@pytest.mark.parametrize("what", sorted(MUTATIONS))
def test_each_key_input_changes_the_key_and_reverting_hits(tmp_path, doubles, images, what):
    ids, paths = images
    base = doubles.run_extract(ids, paths, tmp_path / "c")
    kw: dict = {}
    MUTATIONS[what](doubles, kw)
    depth = kw.get("depths", (1.0,))[0]
    changed = doubles.run_extract(ids, paths, tmp_path / "c", **kw)
    assert changed[(("clean", 0), depth)].status == "computed"
    assert changed[(("clean", 0), depth)].key != base[(("clean", 0), 1.0)].key
    reverted = doubles.run_extract(ids, paths, tmp_path / "c")
    assert reverted[(("clean", 0), 1.0)].status == "hit"


def test_id_list_condition_perturbation_and_version_change_the_key(
    tmp_path, doubles, images, monkeypatch
):
    ids, paths = images
    root = tmp_path / "c"
    conds = [("noise", 1)]
    base = doubles.run_extract(ids, paths, root, conditions=conds)[(("noise", 1), 1.0)].key
    keys = {
        "ids": doubles.run_extract(ids[:-1], paths[:-1], root, conditions=conds),
        "severity": doubles.run_extract(ids, paths, root, conditions=[("noise", 2)]),
        "perturb_code": doubles.run_extract(
            ids, paths, root, conditions=conds, perturb_fn=lambda im, n, s, i: 255 - im
        ),
    }
    got = {k: next(iter(v.values())).key for k, v in keys.items()}
    assert len({base, *got.values()}) == 4
    monkeypatch.setattr(crsbench, "__version__", "999.0")
    bumped = doubles.run_extract(ids, paths, root, conditions=conds)
    assert bumped[(("noise", 1), 1.0)].status == "computed"


@pytest.mark.parametrize("damage", ["bitflip", "truncate", "zerofill", "manifest_garbage"])
def test_corrupt_shard_detected_reported_and_recomputed(tmp_path, doubles, images, damage, caplog):
    ids, paths = images
    root = tmp_path / "c"
    good = doubles.run_extract(ids, paths, root)
    k = (("clean", 0), 1.0)
    ref = _file_bytes(good[k])
    cache = FeatureCache(root)
    final_m = cache.manifest_path(good[k].key)
    final_m.unlink()  # force a rebuild from shards
    mans = sorted(p for p in (root / "objects").rglob("*.json"))
    man = json.loads(mans[0].read_text())
    npy = mans[0].with_name(man["file"])
    data = bytearray(npy.read_bytes())
    if damage == "bitflip":
        data[-3] ^= 0x10
        npy.write_bytes(bytes(data))
    elif damage == "truncate":
        npy.write_bytes(bytes(data[: len(data) // 2]))
    elif damage == "zerofill":
        npy.write_bytes(bytes(data[:128]) + bytes(len(data) - 128))
    else:
        mans[0].write_text("{not json")
    with caplog.at_level("WARNING", logger="crsbench"):
        again = doubles.run_extract(ids, paths, root)
    assert [e["event"] for e in again.cache_events] == ["corrupt"]
    assert "corrupt" in caplog.text and str(mans[0].name)[:16] in caplog.text
    assert again.n_decoded == len(man["ids"])  # only the damaged shard was recomputed
    assert _file_bytes(again[k]) == ref
    assert any((root / "corrupt").iterdir())


def test_deleted_manifest_leaves_an_orphan_that_gc_removes(tmp_path, doubles, images):
    ids, paths = images
    root = tmp_path / "c"
    res = doubles.run_extract(ids, paths, root)
    cache = FeatureCache(root)
    key = res[(("clean", 0), 1.0)].key
    npy = cache.array_path(key)
    cache.manifest_path(key).unlink()
    assert cache.get(key).status == "miss"
    assert npy in cache.gc() and not npy.exists()


def test_nan_or_inf_features_rejected_with_count_and_ids(tmp_path, doubles, images):
    ids, paths = images
    with pytest.raises(CacheError, match=r"NaN/Inf in 4 of 4 rows; first ids: \['id0000'"):
        doubles.run_extract(
            ids, paths, tmp_path / "c", encoder=doubles.TinyEncoder(scale=float("inf"))
        )
    assert not list((tmp_path / "c" / "objects").rglob("*.json"))


def test_put_get_roundtrip_and_concurrent_same_key_writers(tmp_path):
    cache = FeatureCache(tmp_path)
    arr = np.arange(12, dtype=np.float32).reshape(4, 3)
    ids = ["a", "b", "c", "d"]
    errors: list[BaseException] = []

    def write():
        try:
            for _ in range(5):
                FeatureCache(tmp_path).put("k" * 64, arr, ids, {"p": 1})
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    got = cache.get("k" * 64)
    assert got.status == "hit"
    np.testing.assert_array_equal(got.array, arr)
    assert list(got.ids) == ids
    assert not [p for p in (tmp_path / "objects").rglob("*.tmp")]
