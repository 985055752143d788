"""Benchmark of one cell's pass of the test-set bootstrap (run through ``benchmarks/bootstrap.py
--cell-pass``): the current :func:`cell_replicates` (one pass per chunk of
:data:`DEFAULT_CHUNK` replicates: the resample counts drawn once, the plug-in and the
shrunk-world ECE from the same matrix products) against the previous one (two passes per chunk
of 1,000: the axes, then the shrunk ECE on counts drawn again), side by side in this process.

Full paper-size cells (``bootstrap_test_set._cell``) of 3,000 and 30,000 test images, 2,000
replicates, CPU seconds with one BLAS thread (as a worker runs), each side the faster of two
alternating runs; the outputs are checked equal (1e-12). The paper grid at 10,000 replicates
is projected from each side's CPU seconds per element, in one process and on the available
cores (the cells are independent: the pool's CPU is the sequential CPU, measured in
``bootstrap_test_set``). Last line: ``speedup=<previous / current CPU s, 30,000 images>``.
"""

from __future__ import annotations

import os
import time

import numpy as np

from bootstrap_test_set import _cell, _elements, _same, grid_minutes
from crsbench.core.workers import available_cores, one_blas_thread
from crsbench.protocol import BOOTSTRAP_REPLICATES
from crsbench.stats._reference_kernels import reference_two_pass_replicates
from crsbench.stats.cell_axes import (
    DEFAULT_CHUNK,
    cell_replicates,
)
from crsbench.stats.patient_bootstrap import bootstrap_view
from crsbench.stats.resample import SEED_STREAM, resample_counts_for

PREVIOUS_CHUNK = 1_000


def _cpu(fn, *args):
    t0 = time.process_time()
    out = fn(*args)
    return time.process_time() - t0, out


def side_by_side(n: int, n_rep: int) -> tuple[float, float]:
    """CPU seconds of the current and the previous pass over one cell of ``n`` images."""
    cell = bootstrap_view(_cell(n))
    ids = np.arange(n_rep)
    sc = resample_counts_for(SEED_STREAM, 5, ids)
    cur, prev = [], []
    with one_blas_thread():
        for _ in range(2):
            t, out_cur = _cpu(cell_replicates, cell, ids, sc, 0, DEFAULT_CHUNK)
            cur.append(t)
            t, out_prev = _cpu(reference_two_pass_replicates, cell, ids, sc, 0, PREVIOUS_CHUNK)
            prev.append(t)
    if not _same(out_cur, out_prev):
        raise AssertionError("the current and the previous pass disagree")
    return min(cur), min(prev)


def main(quick: bool = False) -> None:
    small, large, n_rep = (500, 2_000, 60) if quick else (3_000, 30_000, 2_000)
    times = {n: side_by_side(n, n_rep) for n in (small, large)}
    cores = available_cores()
    per = {side: [times[n][side] / _elements(n, n_rep) for n in (small, large)] for side in (0, 1)}
    grid = {side: grid_minutes(*per[side], BOOTSTRAP_REPLICATES) for side in (0, 1)}
    for n, (t_cur, t_prev) in times.items():
        print(f"cell_{n}: current_cpu_s={t_cur:.2f} (chunk {DEFAULT_CHUNK}) previous_cpu_s="
              f"{t_prev:.2f} (chunk {PREVIOUS_CHUNK}) ratio={t_prev / t_cur:.2f}  ({n_rep} "
              "replicates, faster of two alternating runs each; same values checked)")  # fmt: skip
    print(f"load_average={' '.join(f'{x:.2f}' for x in os.getloadavg())} cores={cores}")
    for side, name in ((0, "current"), (1, "previous")):
        print(f"paper_grid_projection_cpu_min_{name}: one_process={grid[side]:.1f} "
              f"{cores}_free_cores={grid[side] / cores:.1f}  ({BOOTSTRAP_REPLICATES:,} "
              "replicates, from CPU seconds per element)")  # fmt: skip
    print(f"speedup={times[large][1] / times[large][0]:.2f}  (previous / current pass, one "
          f"{large}-image cell, CPU seconds, side by side)")  # fmt: skip
