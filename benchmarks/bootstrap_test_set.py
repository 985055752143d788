"""Benchmark of the test-patient × seed bootstrap (run through ``benchmarks/bootstrap.py``).

1. Speed: the weighted macro-AUROC of one cell (n test images × 14 labels) under B replicate
   weightings (one sort per label, replicates as matrix work) against a plain loop of
   ``sklearn.metrics.roc_auc_score`` on the same resampled rows (fewer replicates, linear
   extrapolation, said in the output).
2. Projection: the measured time of one full cell (clean, 15 conditions, 4 fractions × 5 seeds,
   a shift target; one chunk of replicates as the bootstrap evaluates them) per (replicate ×
   image × label × prediction), measured at 3,000 and at 30,000 test images, scaled to the
   paper grid at paper-size test sets (the 30,000-image figure for CheXpert), at 2,000
   replicates.
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.metrics import roc_auc_score

from crsbench.protocol import PAPER_CONDITIONS
from crsbench.stats.cell_predictions import CellPredictions, EvalSplit
from crsbench.stats.patient_bootstrap import (
    DEFAULT_CHUNK,
    cell_replicate_axes,
)
from crsbench.stats.resample import row_weights
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


def per_element_time(n: int, n_rep: int) -> float:
    """Seconds per (replicate × image × label × prediction) of one full cell."""
    rng = np.random.default_rng(1)
    groups, y, p = _data(n, rng)
    seeds = tuple(range(5))
    cell = CellPredictions(
        "enc", "chexpert", "multilabel", EvalSplit("chexpert", groups, y), seeds, p,
        {f: np.stack([p] * 5) for f in (0.01, 0.05, 0.1, 0.25)},
        dict.fromkeys(PAPER_CONDITIONS, p), (EvalSplit("mimic_cxr", groups, y), p),
    )  # fmt: skip
    t0 = time.perf_counter()
    cell_replicate_axes(cell, range(n_rep))
    elapsed = time.perf_counter() - t0
    return elapsed / (n_rep * n * LABELS * (EVALS_PER_CELL + 1))


def main(quick: bool = False) -> None:
    n, n_rep, n_loop = (1_000, 100, 5) if quick else (5_000, 500, 20)
    t_vec, t_loop, ratio = speed(n, n_rep, n_loop)
    sizes = (1_000, 1_000) if quick else (3_000, 30_000)
    chunk = 20 if quick else DEFAULT_CHUNK
    per_small, per_large = (per_element_time(m, chunk) for m in sizes)
    projected = 0.0
    for ds, e, n_img, k in PAPER_GRID:
        per = per_large if n_img >= 10_000 else per_small
        projected += per * e * n_img * k * (EVALS_PER_CELL + (ds == "chexpert")) * 2_000
    print(f"test_images={n} labels={LABELS} replicates={n_rep}")
    print(f"vectorised_s={t_vec:.3f}")
    print(f"sklearn_loop_s_extrapolated={t_loop:.1f}  (loop timed on {n_loop} replicates)")
    for m, per in zip(sizes, (per_small, per_large), strict=True):
        print(f"cell_s_per_element_{m}={per:.3e}  (replicate x image x label x prediction; "
              f"{m} test images, one chunk of {chunk} replicates)")  # fmt: skip
    grid = "; ".join(f"{d}: {e} enc x {m} img x {k} labels" for d, e, m, k in PAPER_GRID)
    print(f"paper_grid={grid}")
    print(
        f"paper_grid_projection_min={projected / 60:.1f}  (2,000 replicates, one process; "
        f"per-element time of {sizes[1]} images for test sets >= 10,000, else {sizes[0]})"
    )
    print(f"speedup={ratio:.1f}")
