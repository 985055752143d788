"""Benchmark: the compiled replicate AUROC kernel against the blocked sparse-matrix kernel it
replaced, side by side in one process.

Paper-like CheXpert test splits (1/16, 1/4 and the full 38,205 images of ~12,900 patients,
three images a patient; 14 labels at 2–40 % prevalence; continuous float32 scores with some
ties) under ``--replicates`` bootstrap replicates (patient counts as the bootstrap draws them).
Each size runs ``--repeats`` times, the two kernels alternating, CPU seconds of this process
with one BLAS thread (as a bootstrap worker runs); the two outputs are checked bit-identical.
The compiled kernel's first call (numba's compilation) is timed on its own and left out.

Prints per size every run and the medians, then ``speedup=<median sparse / median compiled at
the full size>``.
Usage: ``python benchmarks/auroc_kernel.py [--replicates 2000] [--repeats 3] [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from crsbench.core.workers import one_blas_thread
from crsbench.stats import replicate_auroc
from crsbench.stats._sparse_auroc import sparse_auroc_columns
from crsbench.stats.replicate_weights import ReplicateWeights
from crsbench.stats.resample import patient_index, resample_counts_for

LABELS = 14
FULL_ROWS = 38_205


def _columns(n: int, seed: int = 0):
    """14 label columns of ``n`` rows: (rows, target, score) as the kernel takes them."""
    rng = np.random.default_rng(seed)
    prevalence = np.linspace(0.02, 0.4, LABELS)
    y = (rng.random((n, LABELS)) < prevalence).astype(float)
    p = 1 / (1 + np.exp(-(1.5 * y + rng.normal(0, 1, (n, LABELS)))))
    p = p.astype(np.float32).astype(np.float64)
    p[: n // 20] = np.round(p[: n // 20], 2)  # some tied scores
    return [(None, y[:, j], p[:, j]) for j in range(LABELS)]


def _weights(n: int, n_rep: int) -> ReplicateWeights:
    groups = (np.arange(n) // 3).astype(str)
    patients, inverse = patient_index(groups)
    counts = resample_counts_for("chexpert", len(patients), range(n_rep))
    return ReplicateWeights.of(counts, inverse)


def _cpu(fn, *args):
    t0 = time.process_time()
    out = fn(*args)
    return time.process_time() - t0, out


def side_by_side(n: int, n_rep: int, repeats: int) -> tuple[list[float], list[float]]:
    """CPU seconds of each run of the compiled and the sparse kernel over one split."""
    columns = _columns(n)
    compiled, sparse = [], []
    for _ in range(repeats):
        w = _weights(n, n_rep)  # fresh: no block kept from the other kernel's run
        t, new = _cpu(replicate_auroc.weighted_auroc_columns, columns, w)
        compiled.append(t)
        t, old = _cpu(sparse_auroc_columns, columns, _weights(n, n_rep))
        sparse.append(t)
        if not np.array_equal(new, old, equal_nan=True):
            raise AssertionError(f"the kernels disagree at {n} rows")
    return compiled, sparse


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=2_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="Small sizes and 100 replicates.")
    args = ap.parse_args()
    sizes = (600, 2_400) if args.quick else (FULL_ROWS // 16, FULL_ROWS // 4, FULL_ROWS)
    n_rep = 100 if args.quick else args.replicates
    with one_blas_thread():
        t, _ = _cpu(replicate_auroc.weighted_auroc_columns, _columns(50), _weights(50, 4))
        print(f"first_call_cpu_s={t:.2f}  (numba compiles the kernel; once per process)")
        medians = {}
        for n in sizes:
            compiled, sparse = side_by_side(n, n_rep, args.repeats)
            medians[n] = (float(np.median(compiled)), float(np.median(sparse)))
            runs = " ".join(f"{c:.3f}/{s:.3f}" for c, s in zip(compiled, sparse, strict=True))
            per = medians[n][0] / (n * LABELS * n_rep) * 1e9
            print(f"rows={n} labels={LABELS} replicates={n_rep}: compiled/sparse CPU s per run "
                  f"{runs}; median {medians[n][0]:.3f}/{medians[n][1]:.3f} "
                  f"ratio={medians[n][1] / medians[n][0]:.2f} compiled_ns_per_element={per:.3f}"
                  )  # fmt: skip
    print(f"load_average={' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    full = sizes[-1]
    print(f"speedup={medians[full][1] / medians[full][0]:.2f}  (sparse / compiled kernel, "
          f"median CPU s, {full} rows, side by side, outputs bit-identical)")  # fmt: skip


if __name__ == "__main__":
    main()
