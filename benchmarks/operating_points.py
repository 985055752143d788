"""Benchmark: the operating points' sensitivity-loss intervals with each dataset's resample
counts drawn once for every cell (``crsbench.stats.operating_point_loss``) against the loop
that draws them again in every cell (as the code did before), side by side in one process.

Planted CheXpert-like cells (``--encoders`` encoders; the test set and ``--targets`` shift
targets of ``--patients`` patients each, two to four images a patient, 14 labels; a
validation set for the thresholds), ``--replicates`` replicates. Each side runs
``--repeats`` times, alternating; CPU seconds with one BLAS thread; the two tables are
checked identical. Prints every run and the medians, then ``speedup=<median loop / median
shared>``.
Usage: ``python benchmarks/operating_points.py [--encoders 15] [--patients 3000]
[--targets 4] [--replicates 2000] [--repeats 3] [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pandas as pd

from crsbench.core.workers import one_blas_thread
from crsbench.stats.cell_predictions import CellPredictions, EvalSplit
from crsbench.stats.operating_point_loss import sensitivity_loss_intervals

LABELS = 14


def _split(rng, name: str, n_patients: int, mu: float) -> tuple[EvalSplit, np.ndarray]:
    per = rng.integers(2, 5, n_patients)
    groups = np.repeat(np.arange(n_patients), per)
    y = (rng.random((len(groups), LABELS)) < 0.2).astype(float)
    z = mu * y + rng.standard_normal(y.shape)
    return EvalSplit(name, groups.astype(str), y), 1 / (1 + np.exp(-z))


def planted_cells(n_encoders: int, n_patients: int, n_targets: int) -> dict:
    """Cells sharing their datasets' patients (as a panel's cells do), scores per encoder."""
    cells = {}
    for e in range(n_encoders):
        rng = np.random.default_rng(e)
        layout = np.random.default_rng(10_000)  # the same patients and images in every cell
        val, test = _split(layout, "val", n_patients, 1.5), _split(layout, "chexpert", n_patients,
                                                                    1.5)  # fmt: skip
        targets = [_split(layout, f"target{t}", n_patients, 1.0) for t in range(n_targets)]
        noisy = [(s, np.clip(p + rng.normal(0, 0.02, p.shape), 0, 1))
                 for s, p in (val, test, *targets)]  # fmt: skip
        cells[(f"enc{e:02d}", "chexpert")] = CellPredictions(
            f"enc{e:02d}", "chexpert", "multilabel", noisy[1][0], (0,), noisy[1][1],
            val=noisy[0], extra_shifts=tuple(noisy[2:]))  # fmt: skip
    return cells


def per_cell_loop(cells, n_replicates: int, seed: int) -> pd.DataFrame:
    """The previous way: each cell draws each split's resample counts itself (the intervals
    of one cell at a time)."""
    return pd.concat([sensitivity_loss_intervals({key: cell}, n_replicates=n_replicates, seed=seed)
                      for key, cell in cells.items()], ignore_index=True)  # fmt: skip


def _cpu(fn, *args):
    t0 = time.process_time()
    out = fn(*args)
    return time.process_time() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encoders", type=int, default=15)
    ap.add_argument("--patients", type=int, default=3_000)
    ap.add_argument("--targets", type=int, default=4)
    ap.add_argument("--replicates", type=int, default=2_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--quick", action="store_true", help="3 encoders, 300 patients, 200 replicates."
    )
    args = ap.parse_args()
    if args.quick:
        args.encoders, args.patients, args.replicates = 3, 300, 200
    cells = planted_cells(args.encoders, args.patients, args.targets)
    shared, loop = [], []
    with one_blas_thread():
        for _ in range(args.repeats):
            t, new = _cpu(lambda: sensitivity_loss_intervals(cells, n_replicates=args.replicates))
            shared.append(t)
            t, old = _cpu(per_cell_loop, cells, args.replicates, 0)
            loop.append(t)
            pd.testing.assert_frame_equal(new, old, check_exact=True)
    runs = " ".join(f"{a:.2f}/{b:.2f}" for a, b in zip(shared, loop, strict=True))
    med_shared, med_loop = float(np.median(shared)), float(np.median(loop))
    print(f"encoders={args.encoders} patients={args.patients} targets={args.targets} "
          f"replicates={args.replicates}: shared/per-cell CPU s per run {runs}; median "
          f"{med_shared:.2f}/{med_loop:.2f} (tables identical)")  # fmt: skip
    print(f"load_average={' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"speedup={med_loop / med_shared:.2f}  (per-cell counts / shared counts, median CPU s)")


if __name__ == "__main__":
    main()
