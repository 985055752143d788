"""The subgroup analysis, side by side: the current weights against the previous ones.

A subgroup's replicate kernels used to read the bootstrap counts of every test patient (the
rows outside the subgroup weighed 0), each target's overall drop was recomputed for every
subgroup lacking the target's rows, and the debiased ECE made one product per label column
over every replicate (``_reference_kernels.reference_debiased_ece``). Now a subgroup reads only
its own patients' counts, the drops are computed once per cell, and the debiased ECE's
columns share one product per block of replicates. This script writes a planted paper-size store (the
first ``--encoders`` encoders of the paper config at ``--scale`` of the paper's test-set sizes,
:mod:`benchmarks.paper_scale`'s writer), loads its per-sample predictions, and runs
:func:`crsbench.stats.subgroups.subgroup_analysis` in this process (``n_jobs=1``) with the
current code and with the previous behaviour patched in, alternating ``--runs`` times; it
checks the tables agree (to 1e-9 relative) and prints each run's CPU seconds and
``speedup=<median previous / median current>``::

    python benchmarks/subgroup_speed.py [--scale 1/16] [--encoders 2] [--replicates 2000]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _previous_weights(self, rows: np.ndarray):
    """The previous ``SplitResampling.weights``: every patient's counts."""
    from crsbench.stats.weighted_metrics import ReplicateWeights

    ones = np.ones((1, self.counts.shape[1]), dtype=self.counts.dtype)
    return ReplicateWeights.of(np.vstack([ones, self.counts]), self.inverse[rows])


def _previous_drop(self, t):
    """The previous ``CellResampling.overall_drop``: recomputed at every call."""
    from crsbench.stats.subgroup_values import auroc_on

    all_test, all_t = np.arange(len(self.test.inverse)), np.arange(len(t.inverse))
    clean = auroc_on(self.cell, self.test.split, self.cell.clean, all_test,
                     self.test.weights(all_test))  # fmt: skip
    return clean - auroc_on(self.cell, t.split, t.prob, all_t, t.weights(all_t))


@contextlib.contextmanager
def previous():
    """The previous behaviour patched into the resampling classes."""
    from crsbench.stats import subgroup_resampling as sr
    from crsbench.stats import subgroup_values as sv
    from crsbench.stats._reference_kernels import reference_debiased_ece
    from crsbench.stats.weighted_metrics import weighted_ece

    def two_passes(y, prob, task, w):  # the plug-in and the debiased ECE apart, as before
        return np.stack([weighted_ece(y, prob, task, w), reference_debiased_ece(y, prob, task, w)])

    saved = (sr.SplitResampling.weights, sr.CellResampling.overall_drop,
             sv.weighted_debiased_ece, sv.weighted_ece_and_debiased)  # fmt: skip
    sr.SplitResampling.weights, sr.CellResampling.overall_drop = _previous_weights, _previous_drop
    sv.weighted_debiased_ece, sv.weighted_ece_and_debiased = reference_debiased_ece, two_passes
    try:
        yield
    finally:
        (sr.SplitResampling.weights, sr.CellResampling.overall_drop,
         sv.weighted_debiased_ece, sv.weighted_ece_and_debiased) = saved  # fmt: skip


def load_cells(store: Path) -> dict:
    """The store's per-sample predictions of every cell."""
    from crsbench.stats.store_predictions import load_store_predictions
    from crsbench.store.reader import load_runs

    runs = load_runs(store)
    keys = sorted(set(zip(runs["encoder"], runs["dataset"], strict=True)))
    seeds = sorted(int(s) for s in runs["seed"].unique())
    return load_store_predictions(store, keys, seeds).cells


def timed(cells: dict, replicates: int) -> tuple[float, pd.DataFrame]:
    """CPU seconds of one subgroup analysis in this process, and its subgroup table."""
    from crsbench.stats.subgroups import subgroup_analysis

    t0 = time.process_time()
    res = subgroup_analysis(cells, n_replicates=replicates, seed=0, n_jobs=1)
    return time.process_time() - t0, pd.concat([res.subgroups, res.worst], ignore_index=True)


def same(a: pd.DataFrame, b: pd.DataFrame) -> float:
    """Largest relative difference of the numeric columns (raises when the shapes differ)."""
    num = a.select_dtypes("number").columns
    pd.testing.assert_frame_equal(a.drop(columns=num), b.drop(columns=num))
    x, y = a[num].to_numpy(float), b[num].to_numpy(float)
    if not np.array_equal(np.isnan(x), np.isnan(y)):
        raise AssertionError("the two versions leave different values undefined")
    ok = ~np.isnan(x)
    return float(np.max(np.abs(x[ok] - y[ok]) / np.maximum(np.abs(y[ok]), 1e-12), initial=0.0))


def main(argv: list[str] | None = None) -> int:
    """Write the store, run both versions alternately, print the runs and the ratio."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=lambda s: float(Fraction(s)), default=1 / 16)
    ap.add_argument("--encoders", type=int, default=2)
    ap.add_argument("--replicates", type=int, default=2_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    from paper_scale import write_step

    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        with contextlib.redirect_stdout(sys.stderr):
            write_step(store, args.scale, args.encoders)
        cells = load_cells(store)
    current, before, worst = [], [], 0.0
    for run in range(args.runs):
        t_new, new = timed(cells, args.replicates)
        with previous():
            t_old, old = timed(cells, args.replicates)
        worst = max(worst, same(new, old))
        current.append(t_new)
        before.append(t_old)
        print(f"run {run + 1}: current {t_new:.1f} s, previous {t_old:.1f} s, "
              f"ratio {t_old / t_new:.2f}", flush=True)  # fmt: skip
    print(f"cells={len(cells)} replicates={args.replicates} scale={args.scale:g} "
          f"largest relative difference={worst:.1e}")  # fmt: skip
    print(f"speedup={statistics.median(before) / statistics.median(current):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
