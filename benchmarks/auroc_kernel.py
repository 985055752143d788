"""Benchmark: the compiled replicate kernels against those they replaced, side by side in one
process: the AUROC kernel against the blocked sparse-matrix kernel, and the ECE's compiled
per-(patient, bin) sums against the grouped matrix products (plug-in and shrunk ECE, and the
debiased ECE of the subgroup analysis).

Paper-like CheXpert test splits (1/16, 1/4 and the full 38,205 images of ~12,900 patients,
three images a patient; 14 labels at 2–40 % prevalence; continuous float32 scores with some
ties) under ``--replicates`` bootstrap replicates (patient counts as the bootstrap draws them).
Each size runs ``--repeats`` times, the two kernels alternating, CPU seconds of this process
with one BLAS thread (as a bootstrap worker runs); the two outputs are checked bit-identical.
The compiled kernel's first call (numba's compilation) is timed on its own and left out.

Prints per size and kernel every run and the medians (the ECE outputs checked equal to
1e-12), then ``speedup=<median sparse / median compiled AUROC at the full size>
ece_speedup=<the same for the plug-in + debiased ECE>``.
Usage: ``python benchmarks/auroc_kernel.py [--replicates 2000] [--repeats 3] [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from crsbench.core.workers import one_blas_thread
from crsbench.stats import replicate_auroc
from crsbench.stats._reference_kernels import grouped_debiased_ece, grouped_ece
from crsbench.stats._sparse_auroc import sparse_auroc_columns
from crsbench.stats.replicate_weights import ReplicateWeights
from crsbench.stats.resample import patient_index, resample_counts_for
from crsbench.stats.weighted_metrics import weighted_debiased_ece, weighted_ece_and_shrunk

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


def _label_matrix(n: int, seed: int = 0):
    """The same 14 labels as a (targets, probabilities) pair, as the ECE takes them."""
    cols = _columns(n, seed)
    return np.stack([t for _, t, _ in cols], 1), np.stack([s for _, _, s in cols], 1)


def _compiled_ece(y, p, w):
    return weighted_ece_and_shrunk(y, p, "multilabel", w), weighted_debiased_ece(
        y, p, "multilabel", w)  # fmt: skip


def _grouped_ece(y, p, w):
    return grouped_ece(y, p, "multilabel", w, (False, True)).T, grouped_debiased_ece(
        y, p, "multilabel", w)  # fmt: skip


def ece_side_by_side(n: int, n_rep: int, repeats: int) -> tuple[list[float], list[float]]:
    """CPU seconds of each run of the compiled and the grouped ECE (plug-in, shrunk, debiased)."""
    y, p = _label_matrix(n)
    compiled, grouped = [], []
    for _ in range(repeats):
        t, new = _cpu(_compiled_ece, y, p, _weights(n, n_rep))
        compiled.append(t)
        t, old = _cpu(_grouped_ece, y, p, _weights(n, n_rep))
        grouped.append(t)
        for a, b in zip(new, old, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12)
    return compiled, grouped


def _line(name: str, n: int, n_rep: int, new: list[float], old: list[float]) -> float:
    runs = " ".join(f"{c:.3f}/{s:.3f}" for c, s in zip(new, old, strict=True))
    med_new, med_old = float(np.median(new)), float(np.median(old))
    per = med_new / (n * LABELS * n_rep) * 1e9
    print(f"{name} rows={n} labels={LABELS} replicates={n_rep}: compiled/previous CPU s per run "
          f"{runs}; median {med_new:.3f}/{med_old:.3f} ratio={med_old / med_new:.2f} "
          f"compiled_ns_per_element={per:.3f}")  # fmt: skip
    return med_old / med_new


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
        t_ece, _ = _cpu(_compiled_ece, *_label_matrix(50), _weights(50, 4))
        print(f"first_call_cpu_s={t:.2f} auroc, {t_ece:.2f} ece  (numba compiles each kernel; "
              "once per process)")  # fmt: skip
        auroc, ece = {}, {}
        for n in sizes:
            auroc[n] = _line("auroc", n, n_rep, *side_by_side(n, n_rep, args.repeats))
            ece[n] = _line("ece", n, n_rep, *ece_side_by_side(n, n_rep, args.repeats))
    print(f"load_average={' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    full = sizes[-1]
    print(f"speedup={auroc[full]:.2f} ece_speedup={ece[full]:.2f}  (previous / compiled kernel, "
          f"median CPU s, {full} rows, side by side; AUROC bit-identical, ECE to 1e-12)")  # fmt: skip


if __name__ == "__main__":
    main()
