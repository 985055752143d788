"""Point estimates on the test set as drawn, side by side: the direct AUROC against the
replicate plan.

Every point estimate of the test-patient bootstrap (each cell's axes and per-seed values, the
seed-only bootstrap's input, every planted world of ``benchmarks/interval_coverage.py``) evaluates the
AUROC under one replicate of unit weights. That used to build the replicate kernel's plan (a
sparse matrix per column, sized for blocks of replicates); it now sums the same integers
directly (``crsbench.stats.replicate_auroc._unit_auroc``). This script draws ``--worlds``
planted worlds of a scenario of ``crsbench.testing.scenarios`` and times
:func:`crsbench.stats.patient_bootstrap.per_seed_axes` on their cells with the direct path
and with the plan forced (``_unit`` patched to False), alternating ``--runs`` times in this
process; it checks both give the same table to the last bit and prints each run's CPU seconds
and ``speedup=<median plan / median direct>``::

    python benchmarks/point_auroc.py [--scenario "chexpert 14 labels"] [--worlds 5] [--runs 3]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time

import numpy as np
import pandas as pd

from crsbench.stats import replicate_auroc
from crsbench.stats.patient_bootstrap import per_seed_axes
from crsbench.testing.scenarios import SCENARIOS, draw_parameters, draw_world


@contextlib.contextmanager
def plan_forced():
    """Every AUROC through the replicate plan, as before the direct path."""
    saved = replicate_auroc._unit
    replicate_auroc._unit = lambda w: False
    try:
        yield
    finally:
        replicate_auroc._unit = saved


def _worlds(name: str, n: int) -> list:
    scenario = SCENARIOS[name]
    params = draw_parameters(scenario, np.random.default_rng([9, 0]))
    return [draw_world(scenario, params, np.random.default_rng([9, 7, w])) for w in range(n)]


def _timed(worlds: list) -> tuple[float, list[pd.DataFrame]]:
    t0 = time.process_time()
    tables = [per_seed_axes(cells) for cells in worlds]
    return time.process_time() - t0, tables


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="chexpert 14 labels", choices=sorted(SCENARIOS))
    parser.add_argument("--worlds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    worlds = _worlds(args.scenario, args.worlds)
    direct, plan = [], []
    for run in range(1, args.runs + 1):
        d, fast = _timed(worlds)
        with plan_forced():
            p, slow = _timed(worlds)
        for a, b in zip(fast, slow, strict=True):
            pd.testing.assert_frame_equal(a, b, check_exact=True)
        direct.append(d)
        plan.append(p)
        print(f"run {run}: direct {d:.2f} CPU s, plan {p:.2f} CPU s, ratio {p / d:.2f}", flush=True)
    print(f"scenario={args.scenario!r} worlds={args.worlds} identical=True")
    print(f"speedup={statistics.median(plan) / statistics.median(direct):.2f}")


if __name__ == "__main__":
    main()
