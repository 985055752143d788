"""Forward passes side by side (the CPU extraction's threads): every family gives, in two
threads at once on one torch thread each, the very bytes of one pass at a time on one torch
thread (each thread's layer taps are its own pass's, never the other thread's)."""

from __future__ import annotations

import threading

import pytest
import torch

from crsbench.encoders import ENCODERS, build
from crsbench.protocol import LAYER_DEPTHS

ALL = ENCODERS.names()


def _inputs(enc, seed: int) -> torch.Tensor:
    channels = 1 if enc.card.domain == "chest_xray" else 3
    gen = torch.Generator().manual_seed(seed)
    images = torch.randint(0, 256, (3, channels, 40, 52), dtype=torch.uint8, generator=gen)
    return enc.preprocess(images)


def _side_by_side(enc, xs: list[torch.Tensor], rounds: int) -> list[list[dict]]:
    """Each input's features from its own thread, ``rounds`` times, the threads released at
    once so that their passes overlap (and each thread's hooks see the other's blocks run)."""
    got: list[list[dict]] = [[] for _ in xs]
    start = threading.Barrier(len(xs))
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            start.wait()
            with torch.inference_mode():
                for _ in range(rounds):
                    got[i].append(enc.forward_features(xs[i], LAYER_DEPTHS))
        except BaseException as err:  # re-raised in the test's thread
            errors.append(err)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(xs))]
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        torch.set_num_threads(saved)
    if errors:
        raise errors[0]
    return got


@pytest.mark.parametrize("name", ALL)
def test_two_threads_give_the_bytes_of_one_pass_at_a_time(name: str) -> None:
    enc = build(name, tiny=True, pretrained=False)
    assert enc.concurrent_forwards
    xs = [_inputs(enc, 0), _inputs(enc, 1)]
    saved = torch.get_num_threads()
    torch.set_num_threads(1)  # the thread count may move low bits (EfficientNet-Lite0's)
    try:
        alone = [enc.forward_features(x, LAYER_DEPTHS) for x in xs]
    finally:
        torch.set_num_threads(saved)
    for i, rounds in enumerate(_side_by_side(enc, xs, rounds=3)):
        for feats in rounds:
            assert set(feats) == set(LAYER_DEPTHS)
            for d in LAYER_DEPTHS:
                assert torch.equal(feats[d], alone[i][d]), (name, i, d)
    # the two inputs differ, so a tap caught from the other thread's pass would show
    assert not torch.equal(alone[0][0.25], alone[1][0.25])
