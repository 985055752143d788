"""The extraction's forward passes side by side on CPU (crsbench.features.forward_threads)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from crsbench.features import ExtractSettings, FeatureCache, extract, runner
from crsbench.features.forward_threads import CPU_FORWARD_THREADS, ForwardThreads, forward_threads


def test_how_many_passes_run_at_once() -> None:
    assert CPU_FORWARD_THREADS == 2
    assert forward_threads(2, on_cuda=False, concurrent=True) == 2
    assert forward_threads(16, on_cuda=False, concurrent=True) == 2
    assert forward_threads(1, on_cuda=False, concurrent=True) == 1  # one usable core
    assert forward_threads(8, on_cuda=True, concurrent=True) == 1  # one CUDA stream
    assert forward_threads(8, on_cuda=False, concurrent=False) == 1  # a stateful module


def test_torch_threads_are_shared_out_and_restored() -> None:
    saved = torch.get_num_threads()
    torch.set_num_threads(4)
    try:
        seen = []
        with ForwardThreads(torch, 2) as pool:
            assert torch.get_num_threads() == 2 and pool.in_flight == 2
            fut = pool.submit(
                lambda: (threading.current_thread().name, torch.is_inference_mode_enabled())
            )
            seen.append(fut.result())
        assert torch.get_num_threads() == 4
        assert seen[0][0].startswith("crsbench-forward") and seen[0][1]  # inference mode there
        with ForwardThreads(torch, 1) as pool:  # one thread: done at once, in this thread
            assert torch.get_num_threads() == 4 and pool.in_flight == 0
            fut = pool.submit(threading.current_thread)
            assert fut.done() and fut.result() is threading.current_thread()
    finally:
        torch.set_num_threads(saved)


def test_an_error_in_a_pass_reaches_the_caller_and_threads_come_back() -> None:
    saved = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        for n in (1, 2):
            with pytest.raises(ZeroDivisionError), ForwardThreads(torch, n) as pool:
                pool.submit(lambda: 1 / 0).result()
            assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(saved)


def _extract(tmp_path, images, n_forward: int, monkeypatch) -> dict:
    encoders = pytest.importorskip("crsbench.encoders")
    perturb = pytest.importorskip("crsbench.perturb")
    monkeypatch.setattr(runner, "forward_threads", lambda *a: n_forward)
    enc = encoders.build("random_cnn", tiny=True)
    ids, paths = images
    conds = [("clean", 0), *perturb.PAPER_CONDITIONS[1::4]]
    settings = ExtractSettings(
        conditions=conds, num_workers=0, progress=False, depths=(0.5, 1.0),
        batch_size=4, shard_size=3, working_size=enc.input_size,
    )  # fmt: skip
    cache = FeatureCache(tmp_path / f"cache{n_forward}")
    return extract(enc, ids, paths, cache=cache, dataset_revision="r", settings=settings)


def test_two_passes_at_once_store_the_bytes_of_one_at_a_time(tmp_path, images, monkeypatch):
    saved = torch.get_num_threads()
    try:
        torch.set_num_threads(1)  # one pass at a time on one torch thread
        one = _extract(tmp_path, images, 1, monkeypatch)
        torch.set_num_threads(2)  # two passes at once, one torch thread each
        two = _extract(tmp_path, images, 2, monkeypatch)
    finally:
        torch.set_num_threads(saved)
    assert set(one) == set(two) and len(one) > 2
    for key, fa in one.items():
        assert list(fa.ids) == list(two[key].ids) and fa.key == two[key].key
        assert np.array_equal(np.asarray(fa.features), np.asarray(two[key].features)), key
