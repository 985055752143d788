"""Benchmark of the test-patient × seed bootstrap (run through ``benchmarks/bootstrap.py``).

0. Kernels, side by side: one full cell's share of the bootstrap (:func:`cell_replicates`,
   one chunk of replicates) with the replicate kernels (weighted AUROC, ECE, shrunk ECE)
   and with the previous ones (:mod:`crsbench.stats._reference_kernels`, swapped in for the
   run), at 3,000 and 30,000 test images, CPU seconds of this process (each side's faster of
   two alternating runs), the two results checked equal; the last line ``speedup=`` is the
   previous kernels' time over the new at 30,000 images.
1. Speed: the weighted macro-AUROC of one cell (n test images × 14 labels) under B replicate
   weightings (one sort per label, replicates as matrix work) against a plain loop of
   ``sklearn.metrics.roc_auc_score`` on the same resampled rows (fewer replicates, linear
   extrapolation, said in the output).
2. Projection, measured: the time of full cells (clean, 15 conditions, 4 fractions × 5
   seeds, a shift target; one chunk of replicates as the bootstrap evaluates them, axes and
   the shrunk-world ECE) per (replicate × image × label × prediction): one cell of 3,000
   test images, and a batch of 2 × (available cores) cells of 30,000 images computed one
   after another and then in a process pool of every available core, side by side. The
   sequential per-element times scale to the paper grid at paper-size test sets at the
   protocol's 10,000 replicates (``--replicates`` for another count) (the 30,000-image figure for CheXpert); the pool's projection is that times
   the batch's measured pool / sequential time ratio (its parallel efficiency printed).
"""

from __future__ import annotations

import os
import resource
import sys
import time
from contextlib import contextmanager
from functools import partial

import numpy as np
from sklearn.metrics import roc_auc_score

from crsbench.core.workers import available_cores, one_blas_thread
from crsbench.protocol import BOOTSTRAP_REPLICATES, PAPER_CONDITIONS
from crsbench.stats import _reference_kernels as ref
from crsbench.stats import weighted_metrics as new
from crsbench.stats.cell_axes import DEFAULT_CHUNK, cell_replicates
from crsbench.stats.cell_pool import map_cells
from crsbench.stats.cell_predictions import CellPredictions, EvalSplit
from crsbench.stats.patient_bootstrap import bootstrap_view
from crsbench.stats.resample import SEED_STREAM, resample_counts_for, row_weights
from crsbench.stats.weighted_metrics import weighted_macro_auroc

LABELS = 14
#: Paper grid at paper-size test sets: (dataset, encoders, test images, label columns).
PAPER_GRID = (("chexpert", 15, 30_000, 14), ("isic2019", 15, 5_000, 8),
              ("aptos2019", 13, 730, 5))  # fmt: skip
EVALS_PER_CELL = 1 + len(PAPER_CONDITIONS) + 4 * 5  # clean, 15 conditions, 4 fractions × 5 seeds


def _data(n: int, rng: np.random.Generator):
    groups = np.repeat(np.arange(n // 2), 2).astype(str)[:n]
    y = (rng.random((n, LABELS)) < 0.2).astype(float)
    p = 1 / (1 + np.exp(-(y + rng.normal(0, 1, (n, LABELS)))))
    return groups, y, p


def speed(n: int, n_rep: int, n_loop: int) -> tuple[float, float, float]:
    rng = np.random.default_rng(0)
    groups, y, p = _data(n, rng)
    w = row_weights("chexpert", groups, range(n_rep))  # int counts, as the pipeline passes
    t0 = time.perf_counter()
    vec = weighted_macro_auroc(y, p, "multilabel", w)
    t_vec = time.perf_counter() - t0
    t0 = time.perf_counter()
    for b in range(n_loop):
        rows = np.repeat(np.arange(n), w[b].astype(int))
        loop = np.mean([roc_auc_score(y[rows, j], p[rows, j]) for j in range(LABELS)])
        assert abs(loop - vec[b]) < 1e-9, (loop, vec[b])
    t_loop = (time.perf_counter() - t0) / n_loop * n_rep
    return t_vec, t_loop, t_loop / t_vec


def _cell(n: int, dataset: str = "chexpert") -> CellPredictions:
    """A paper-size cell: clean, 4 fractions × 5 seeds, the 15 conditions, a shift target."""
    rng = np.random.default_rng(1)
    groups, y, p = _data(n, rng)
    fractions = {f: np.stack([p] * 5) for f in (0.01, 0.05, 0.1, 0.25)}
    return CellPredictions(
        "enc", dataset, "multilabel", EvalSplit(dataset, groups, y), tuple(range(5)), p,
        fractions, dict.fromkeys(PAPER_CONDITIONS, p), (EvalSplit("mimic_cxr", groups, y), p),
    )  # fmt: skip


def _elements(n: int, n_rep: int) -> int:
    """(replicate × image × label × prediction) elements of one cell of ``n`` test images."""
    return n_rep * n * LABELS * (EVALS_PER_CELL + 1)


def _work(n_rep: int):
    ids = np.arange(n_rep)
    return partial(cell_replicates, replicates=ids, seed_counts=resample_counts_for(
        SEED_STREAM, 5, ids), seed=0, chunk=n_rep)  # fmt: skip


def per_element_time(n: int, n_rep: int) -> float:
    """Seconds per element of one full cell's share of the bootstrap (:func:`cell_replicates`:
    axes and the shrunk-world ECE, one chunk of ``n_rep`` replicates), in this process."""
    t0 = time.perf_counter()
    _work(n_rep)(_cell(n))
    return (time.perf_counter() - t0) / _elements(n, n_rep)


_SWAP = {new.weighted_macro_auroc: ref.reference_macro_auroc, new.weighted_ece: ref.reference_ece,
         new.weighted_shrunk_ece: ref.reference_shrunk_ece,
         new.weighted_ece_and_shrunk: ref.reference_ece_and_shrunk}  # fmt: skip


@contextmanager
def reference_kernels():
    """The previous replicate kernels in every ``crsbench.stats`` module that calls the new."""
    saved = []
    for name, module in list(sys.modules.items()):
        if name.startswith("crsbench.stats.") and module is not None and module is not new:
            for attr, value in vars(module).items():
                if any(value is k for k in _SWAP):
                    saved.append((module, attr, value))
    if {id(v) for _, _, v in saved} != {id(k) for k in _SWAP}:
        raise RuntimeError("the bootstrap no longer calls every kernel this benchmark swaps")
    for module, attr, value in saved:
        setattr(module, attr, _SWAP[value])
    try:
        yield
    finally:
        for module, attr, value in saved:
            setattr(module, attr, value)


def _cell_cpu_s(cell: CellPredictions, n_rep: int):
    t0 = time.process_time()
    out = _work(n_rep)(cell)
    return time.process_time() - t0, out


def _same(a, b) -> bool:
    """Equal axes and extras to 1e-12 relative (ECE differences: float64 rounding)."""
    (x, e, d), (y, f, g) = a, b
    close = partial(np.allclose, rtol=1e-12, atol=1e-14, equal_nan=True)
    return (
        close(x, y) and close(e, f) and d.keys() == g.keys() and all(close(d[k], g[k]) for k in d)
    )


def kernel_speedup(n: int, n_rep: int) -> tuple[float, float, float]:
    """CPU seconds of one full cell of ``n`` images (one chunk of ``n_rep`` replicates) with
    the previous kernels and with the new ones, and their ratio. Each side runs twice,
    alternating (new, previous, new, previous), and keeps its faster run: the first run of a
    process also pays for growing its heap (page faults), which is not the kernels' cost."""
    with one_blas_thread():  # as the bootstrap runs (an idle BLAS thread's spinning is CPU)
        return _alternate(bootstrap_view(_cell(n)), n_rep)


def _alternate(cell: CellPredictions, n_rep: int) -> tuple[float, float, float]:
    new_s, old_s = [], []
    for _ in range(2):
        t, out_new = _cell_cpu_s(cell, n_rep)
        new_s.append(t)
        with reference_kernels():
            t, out_old = _cell_cpu_s(cell, n_rep)
        old_s.append(t)
    if not _same(out_new, out_old):
        raise AssertionError("the new and the previous kernels disagree")
    return min(new_s), min(old_s), min(old_s) / min(new_s)


def _children_cpu_s() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def batch_times(n: int, n_rep: int, n_cells: int, jobs: int) -> tuple[float, float, float, float]:
    """Wall-clock and CPU seconds of ``n_cells`` cells of ``n`` images computed one after
    another in this process and in a pool of ``jobs`` processes (as
    :func:`patient_seed_bootstrap` does; pool start and sending the cells included; the pool's
    CPU is its workers'); checks both give the same numbers."""
    cells = [bootstrap_view(_cell(n, f"chexpert{i}")) for i in range(n_cells)]
    work = _work(n_rep)
    t0, c0 = time.perf_counter(), time.process_time()
    seq = map_cells(work, cells, 1)
    t_seq, cpu_seq = time.perf_counter() - t0, time.process_time() - c0
    t0, c0 = time.perf_counter(), _children_cpu_s()
    par = map_cells(work, cells, jobs)
    t_par, cpu_par = time.perf_counter() - t0, _children_cpu_s() - c0
    for (a, e, x), (b, f, y) in zip(seq, par, strict=True):
        assert np.array_equal(a, b, equal_nan=True) and np.array_equal(e, f, equal_nan=True)
        assert x.keys() == y.keys() and all(np.array_equal(x[k], y[k], equal_nan=True) for k in x)
    return t_seq, t_par, cpu_seq, cpu_par


def grid_minutes(per_small: float, per_large: float, n_rep: int = BOOTSTRAP_REPLICATES) -> float:
    """The paper grid at ``n_rep`` replicates, in minutes, from per-element times."""
    total = 0.0
    for ds, e, n_img, k in PAPER_GRID:
        per = per_large if n_img >= 10_000 else per_small
        total += per * e * n_img * k * (EVALS_PER_CELL + (ds == "chexpert")) * n_rep
    return total / 60


def main(quick: bool = False, replicates: int = BOOTSTRAP_REPLICATES) -> None:
    n, n_rep, n_loop = (1_000, 100, 5) if quick else (5_000, 500, 20)
    small, large = (1_000, 2_000) if quick else (3_000, 30_000)
    chunk = 20 if quick else DEFAULT_CHUNK
    kernels = {size: kernel_speedup(size, chunk) for size in (small, large)}
    t_vec, t_loop, ratio = speed(n, n_rep, n_loop)
    jobs = available_cores()
    n_cells = 2 * jobs
    per_small = per_element_time(small, chunk)
    t_seq, t_par, cpu_seq, cpu_par = batch_times(large, chunk, n_cells, jobs)
    per_large = t_seq / (n_cells * _elements(large, chunk))
    seq_min = grid_minutes(per_small, per_large, replicates)
    pool_min = seq_min * t_par / t_seq
    for size, (t_new, t_old, r) in kernels.items():
        print(f"kernels_cell_{size}: new_cpu_s={t_new:.2f} previous_cpu_s={t_old:.2f} "
              f"ratio={r:.2f}  (one cell, one chunk of {chunk} replicates, faster of two alternating "
              "runs each; same values checked)")  # fmt: skip
    print(f"test_images={n} labels={LABELS} replicates={n_rep}")
    print(f"vectorised_s={t_vec:.3f}")
    print(f"sklearn_loop_s_extrapolated={t_loop:.1f}  (loop timed on {n_loop} replicates)")
    print(f"cell_s_per_element_{small}={per_small:.3e}  (replicate x image x label x "
          f"prediction; one cell, one chunk of {chunk} replicates, this process)")  # fmt: skip
    print(f"batch={n_cells} cells x {large} images x {LABELS} labels, one chunk of {chunk} "
          f"replicates each")  # fmt: skip
    print(f"batch_sequential_s={t_seq:.1f}  (s/element {per_large:.3e})")
    print(f"batch_pool_s={t_par:.1f}  ({jobs} processes, os.sched_getaffinity; pool start and "
          "sending the cells included; same numbers checked)")  # fmt: skip
    print(f"batch_cpu_s sequential={cpu_seq:.1f} pool_workers={cpu_par:.1f}  (CPU the pool's "
          "work took; wall above it is waiting for a core)")  # fmt: skip
    print(f"load_average={' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"parallel_speedup={t_seq / t_par:.2f} parallel_efficiency={t_seq / t_par / jobs:.2f}")
    grid = "; ".join(f"{d}: {e} enc x {m} img x {k} labels" for d, e, m, k in PAPER_GRID)
    print(f"paper_grid={grid}")
    print(
        f"paper_grid_projection_sequential_min={seq_min:.1f}  ({replicates:,} replicates, one "
        "process; "
        f"s/element of the {large}-image batch for test sets >= 10,000, else of {small})"
    )
    print(
        f"paper_grid_projection_pool_min={pool_min:.1f}  ({replicates:,} replicates, {jobs} "
        "processes: the sequential "
        "projection x the batch's measured pool/sequential time ratio)"
    )
    print(
        f"paper_grid_projection_pool_min_previous_kernels={pool_min * kernels[large][2]:.1f}  "
        "(the pool projection x the previous/new kernel ratio at "
        f"{large} images)"
    )
    print(f"speedup_vs_sklearn_loop={ratio:.1f}")
    print(f"speedup={kernels[large][2]:.2f}  (previous / new replicate kernels, one {large}-image "
          "cell, CPU seconds, side by side)")  # fmt: skip
