"""The dry run's throughput is timed as the extraction runs: every pass handed to the forward
threads (at least one pass per thread), the depth-1.0 embedding only."""

from __future__ import annotations

import pytest

from crsbench.features import forward_threads as ft
from crsbench.runs import dryrun


@pytest.mark.parametrize("threads", [1, 2])
def test_throughput_times_at_least_one_pass_per_forward_thread(threads, monkeypatch):
    encoders = pytest.importorskip("crsbench.encoders")
    monkeypatch.setattr(ft, "forward_threads", lambda *a: threads)
    enc = encoders.build("random_cnn", tiny=True)
    shapes: list[int] = []
    real = enc.forward_features
    monkeypatch.setattr(
        enc, "forward_features", lambda x, *a: (shapes.append(x.shape[0]), real(x, *a))[1]
    )
    got = dryrun.encoder_throughput(enc, n_images=3, batch_size=3)
    assert got.img_per_s > 0 and got.memory_kind == "process_rss" and got.peak_mem_mb > 0
    assert shapes == [3] * threads + [3] * threads  # a warm-up, then a pass of 3, per thread
