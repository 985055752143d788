"""The in-process memo of decoded and perturbed images shared by the encoders of a run."""

from __future__ import annotations

import os

import numpy as np

from crsbench.core.types import Condition
from crsbench.features import decode
from crsbench.features.loader import DecodeSet, file_fingerprint, resolve_perturb
from crsbench.features.pixel_memo import PIXEL_MEMO, PixelMemo

CONDS = [Condition("clean", 0), Condition("gaussian_blur", 2), Condition("jpeg", 3)]


def _stacks(paths, ids, size=48):
    ds = DecodeSet(paths, ids, size, CONDS, resolve_perturb(None)[0],
                   [file_fingerprint(p) for p in paths])  # fmt: skip
    return [ds[i][1] for i in range(len(paths))]


def test_a_memo_hit_gives_the_bytes_of_a_fresh_decode(doubles, images, monkeypatch):
    ids, paths = images
    fresh = _stacks(paths, ids)  # memo off: decoded and perturbed from the files
    calls = []
    real = decode.decode_image
    monkeypatch.setattr(
        decode, "decode_image", lambda p, s, b=None: (calls.append(p), real(p, s, b))[1]
    )
    with PIXEL_MEMO.sharing() as memo:
        first = _stacks(paths, ids)
        second = _stacks(paths, ids)  # the next encoder: no decode, no perturbation
        assert memo.hits == len(paths) * len(CONDS) and memo.nbytes > 0
    assert len(calls) == len(paths)  # once per image across both passes
    for a, b, c in zip(fresh, first, second, strict=True):
        assert np.array_equal(a, b) and np.array_equal(a, c)
    assert PIXEL_MEMO.nbytes == 0 and not PIXEL_MEMO.enabled  # emptied after the block


def test_a_changed_file_misses_the_memo(images):
    ids, paths = images
    with PIXEL_MEMO.sharing():
        before = _stacks(paths[:1], ids[:1])[0]
        from PIL import Image

        Image.fromarray(np.full((40, 48, 3), 200, np.uint8)).save(paths[0])
        os.utime(paths[0], ns=(1, 1))  # a new size:mtime fingerprint
        after = _stacks(paths[:1], ids[:1])[0]
    assert not np.array_equal(before, after)
    assert np.array_equal(after, _stacks(paths[:1], ids[:1])[0])  # = a fresh decode


def test_the_memo_keeps_nothing_past_its_budget():
    memo = PixelMemo(max_bytes=100)
    with memo.sharing():
        memo.put("a", np.zeros(60, np.uint8))
        memo.put("b", np.zeros(60, np.uint8))  # would pass 100 bytes: not kept
        assert memo.get("a") is not None and memo.get("b") is None
        assert memo.nbytes == 60 and not memo.get("a").flags.writeable
    assert memo.get("a") is None  # off outside the block


def test_an_unhashable_perturbation_is_not_memoised(images):
    class Unhashable:
        __hash__ = None

        def __call__(self, img, name, severity, image_id):
            return 255 - img

    ids, paths = images
    ds = DecodeSet(paths[:2], ids[:2], 32, CONDS[:2], Unhashable())
    with PIXEL_MEMO.sharing() as memo:
        ds[0], ds[0]
        assert memo.hits == 1  # the clean view only
