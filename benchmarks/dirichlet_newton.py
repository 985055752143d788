"""Dirichlet recalibration: damped Newton (the fit) against BFGS (the former fit), side by side.

Three demo-sized calibration problems (ISIC-like 8 classes × 144 rows, APTOS-like 5 × 90,
CheXpert-like 14 labels × 88 rows), each the protocol's whole CV selection
(``fit_recalibrator("dirichlet", ..., batched=False)``: 25 (lambda, mu) points × 5 folds +
the refit, each fitted one by one by the calibrator, whose solver this compares;
``benchmarks/recal_selection.py`` times the batched selection). Every
problem is run ``REPEATS`` times with each solver, alternating; prints each time, the median
ratio BFGS / Newton and the largest difference of the recalibrated test probabilities.

Run: ``python benchmarks/dirichlet_newton.py``
"""

import statistics
import time

import numpy as np

import crsbench.calibration.dirichlet as dirichlet
from crsbench.calibration import fit_recalibrator

REPEATS = 3


def problem(task: str, k: int, n: int, seed: int = 0):
    """Over-confident probabilities (logits × 3) of ``n`` calibration and 500 test rows."""
    rng = np.random.default_rng(seed)
    if task == "multiclass":
        y = np.arange(n + 500) % k
        logits = 3.0 * (rng.normal(size=(n + 500, k)) + 1.5 * np.eye(k)[y])
        p = np.exp(logits - logits.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        return p[:n], y[:n], p[n:]
    y = (rng.uniform(size=(n + 500, k)) < 0.35).astype(float)
    p = 1.0 / (1.0 + np.exp(-3.0 * (rng.normal(size=(n + 500, k)) + 1.5 * y - 0.75)))
    return p[:n], y[:n], p[n:]


def timed(solver: str, p, y, task: str, test):
    newton = dirichlet._newton
    if solver == "bfgs":
        dirichlet._newton = lambda *a: None  # fit_dirichlet falls back to BFGS
    try:
        t0 = time.perf_counter()
        fit = fit_recalibrator("dirichlet", p, y, task, 0, batched=False)
        return time.perf_counter() - t0, fit.predict_proba(test)
    finally:
        dirichlet._newton = newton


for task, k, n in (("multiclass", 8, 144), ("multiclass", 5, 90), ("multilabel", 14, 88)):
    p, y, test = problem(task, k, n)
    times = {"newton": [], "bfgs": []}
    for _ in range(REPEATS):
        for solver in ("bfgs", "newton"):
            seconds, prob = timed(solver, p, y, task, test)
            times[solver].append(seconds)
            if solver == "bfgs":
                ref = prob
            else:
                diff = float(np.abs(prob - ref).max())
    ratio = statistics.median(b / m for b, m in zip(times["bfgs"], times["newton"], strict=True))
    print(
        f"{task} K={k} n={n}: bfgs {[round(t, 3) for t in times['bfgs']]} s, "
        f"newton {[round(t, 3) for t in times['newton']]} s, "
        f"speedup={ratio:.1f}, max|dp|={diff:.1e}"
    )
