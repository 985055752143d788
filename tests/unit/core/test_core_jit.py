"""LazyKernel: compiled on first use, once, also when threads meet it first together."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from crsbench.core.jit import LazyKernel, float_from_bits


def _twice_plus_bits(x, out):  # pragma: no cover - compiled
    for q in range(x.size):
        out[q] = 2.0 * x[q] + float_from_bits((1 + 1023) << 52)  # + 2.0


def test_threads_calling_a_new_kernel_together_compile_it_once():
    kernel = LazyKernel(_twice_plus_bits)
    x = np.arange(5.0)

    def call(_: int):
        out = np.empty_like(x)
        kernel(x, out)
        return out, kernel._compiled

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(call, range(8)))
    for out, compiled in results:
        np.testing.assert_array_equal(out, 2.0 * x + 2.0)
        assert compiled is results[0][1]
