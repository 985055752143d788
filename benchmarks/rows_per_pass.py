"""Benchmark: the compiled replicate kernels reading four rows per pass over a block of
replicates against one row per pass (the kernels before), side by side in one process: the
AUROC kernel (four untied rows of one class) and the ECE's per-bin sums (four (patient, bin)
entries of one bin; the debiased ECE's five sums, as the subgroup analysis reads them).

Paper-like test splits, every label column sorted once and evaluated under ``--replicates``
bootstrap replicates in the blocks the bootstrap uses (:attr:`ReplicateWeights.block_size`):
CheXpert's test set (38,205 images of ~12,700 patients, 14 labels at 2–40 % prevalence,
continuous float32 scores with some ties) and a PadChest-sized shift target (108,000 images of
45,000 patients), as in ``benchmarks/paper_scale.py``. Each split runs ``--repeats`` times, the
two settings alternating, CPU seconds of this process; the AUROCs are checked bit-identical,
the ECE sums equal to 1e-12 of their scale.

Prints every run and the medians per split and kernel, then ``speedup=<median one row / median
four rows per pass, AUROC, CheXpert-sized split> ece_speedup=<the same for the ECE sums>``.
Usage: ``python benchmarks/rows_per_pass.py [--replicates 2000] [--repeats 3] [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from auroc_kernel import FULL_ROWS, LABELS, _columns
from crsbench.stats.ece_kernel import BinEntries
from crsbench.stats.replicate_auroc import weighted_auroc_columns
from crsbench.stats.replicate_weights import ReplicateWeights
from crsbench.stats.resample import patient_index, resample_counts_for

#: (name, rows, rows per patient) of each split timed.
SPLITS = (("chexpert_test", FULL_ROWS, 3), ("padchest_shift", 108_000, 2.4))


def _weights(n: int, per_patient: float, n_rep: int) -> ReplicateWeights:
    groups = (np.arange(n) / per_patient).astype(int).astype(str)
    patients, inverse = patient_index(groups)
    counts = resample_counts_for("chexpert", len(patients), range(n_rep), narrow=True)
    return ReplicateWeights.of(counts, inverse)


def _all_columns(columns, w: ReplicateWeights, rows_per_pass: int) -> np.ndarray:
    """AUROC of every column under every replicate, block by block (as the bootstrap reads)."""
    return weighted_auroc_columns(columns, w, rows_per_pass=rows_per_pass)


def _ece_sums(entries: list[BinEntries], w: ReplicateWeights, per_pass: int) -> list[np.ndarray]:
    """Every column's per-bin sums, block by block (as the debiased ECE reads them)."""
    out = []
    for start in range(0, w.n_replicates, w.block_size):
        wt = w.transposed(start, w.block_size)
        out += [e.sums(wt, per_pass) for e in entries]
    return out


def _cpu(fn, *args):
    t0 = time.process_time()
    out = fn(*args)
    return time.process_time() - t0, out


def _alternate(fn, data, w: ReplicateWeights, repeats: int, check) -> tuple[list, list]:
    """CPU seconds of ``fn(data, w, 4)`` and ``fn(data, w, 1)``, alternating, each pair checked
    by ``check(four, one)``; the transposed blocks are built before timing."""
    for start in range(0, w.n_replicates, w.block_size):
        w.transposed(start, w.block_size)
    four, one = [], []
    for _ in range(repeats):
        t, new = _cpu(fn, data, w, 4)
        four.append(t)
        t, old = _cpu(fn, data, w, 1)
        one.append(t)
        check(new, old)
    return four, one


def _bit_identical(new, old) -> None:
    if not np.array_equal(new, old, equal_nan=True):
        raise AssertionError("four and one row per pass disagree")


def _close(new, old) -> None:
    for a, b in zip(new, old, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12 * max(float(np.abs(b).max()), 1))


def side_by_side(n: int, per_patient: float, n_rep: int, repeats: int):
    """CPU seconds of each run with four rows and with one row per pass (AUROC)."""
    w = _weights(n, per_patient, n_rep)
    return w, *_alternate(_all_columns, _columns(n), w, repeats, _bit_identical)


def ece_side_by_side(n: int, per_patient: float, n_rep: int, repeats: int):
    """CPU seconds of each run of the debiased ECE's sums, four and one entry per pass."""
    w = _weights(n, per_patient, n_rep)
    entries = []
    for _, t, s in _columns(n):
        bins = np.minimum((s * 15).astype(int), 14)
        entries.append(BinEntries.of(w.inverse, bins, t - s, 15, debiased=True))
    return w, *_alternate(_ece_sums, entries, w, repeats, _close)


def _line(kernel: str, name: str, n: int, w: ReplicateWeights, four, one) -> float:
    runs = " ".join(f"{a:.3f}/{b:.3f}" for a, b in zip(four, one, strict=True))
    med4, med1 = float(np.median(four)), float(np.median(one))
    print(f"{kernel} {name} rows={n} patients={w.n_columns} labels={LABELS} "
          f"replicates={w.n_replicates} block={w.block_size}: four/one per pass CPU s per run "
          f"{runs}; median {med4:.3f}/{med1:.3f} ratio={med1 / med4:.2f} "
          f"ns_per_element={med4 / (n * LABELS * w.n_replicates) * 1e9:.3f}")  # fmt: skip
    return med1 / med4


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=2_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="Small splits and 100 replicates.")
    args = ap.parse_args()
    splits = (("small", 900, 3), ("small_shift", 2_400, 2.4)) if args.quick else SPLITS
    n_rep = 100 if args.quick else args.replicates
    _all_columns(_columns(50), _weights(50, 3, 8), 4)  # numba compiles once per process
    _ece_sums([BinEntries.of(np.arange(4), np.arange(4), np.zeros(4), 15, True)],
              _weights(4, 1, 8), 4)  # fmt: skip
    auroc, ece = [], []
    for name, n, per_patient in splits:
        auroc.append(_line("auroc", name, n, *side_by_side(n, per_patient, n_rep, args.repeats)))
        ece.append(_line("ece_debiased", name, n,
                         *ece_side_by_side(n, per_patient, n_rep, args.repeats)))  # fmt: skip
    print(f"load_average={' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"speedup={auroc[0]:.2f} ece_speedup={ece[0]:.2f}  (one / four per pass, median CPU s, "
          f"{splits[0][1]} rows, side by side; AUROC bit-identical, ECE sums to 1e-12)")  # fmt: skip


if __name__ == "__main__":
    main()
