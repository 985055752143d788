"""What the probes of one cell cost: units of work per probe, and seconds per unit.

Assumed scaling (checked by :func:`measure_probe_rates` at two sizes):

- **logistic**: one joint L-BFGS solve of the whole C grid per distinct row subset costs
  ``n · d · K · m`` units (rows × features × classes × C values): each iteration is two
  matrix products of that size, and the preconditioned solve takes a similar number of
  iterations at any n. The full-fraction subset is the same rows for every seed and is solved
  once (:func:`crsbench.probes.fit_probe_grid` shares identical subsets), as is each
  intermediate layer's full-label probe.
- **mlp**: ``epochs · n · (d·h + h·K)`` units per fit (every epoch run: early stopping only
  shortens it, so this is an upper bound).
- **knn**: ``queries · n · d`` units per fit (one similarity GEMM).

Probe time is one worker's time (one BLAS thread, as the run fits probes); ``--jobs`` workers
divide it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from crsbench.config import BenchmarkConfig
from crsbench.runs.estimate_counts import DatasetRows
from crsbench.runs.estimate_data import ProbeRates
from crsbench.runs.plan import CellPlan

#: Training rows of the two timed logistic grid fits (the second doubles the first).
MEASURE_ROWS = (1000, 2000)
#: Features and classes of the timed fits.
MEASURE_DIM, MEASURE_CLASSES = 256, 8


@dataclass(frozen=True)
class ProbeUnits:
    """Units of work of one cell's probes (see the module docstring)."""

    logistic: float
    mlp: float
    knn: float

    def seconds(self, rates: ProbeRates) -> float:
        """One worker's seconds at ``rates``."""
        return (self.logistic * rates.logistic_s_per_unit + self.mlp * rates.mlp_s_per_unit
                + self.knn * rates.knn_s_per_unit)  # fmt: skip


@dataclass(frozen=True)
class ScalingCheck:
    """The two timed logistic fits: rows, seconds, and their time ratio beside the row ratio."""

    rows: tuple[int, int]
    seconds: tuple[float, float]

    @property
    def ratio(self) -> float:
        """t(n2) / t(n1); linear scaling in n gives n2 / n1."""
        return self.seconds[1] / max(self.seconds[0], 1e-12)

    def line(self) -> str:
        """One line for the output."""
        (n1, n2), (t1, t2) = self.rows, self.seconds
        return (f"logistic grid fit at n={n1}: {t1:.3f} s, n={n2}: {t2:.3f} s "
                f"(x{self.ratio:.2f}; linear in n would be x{n2 / n1:.2f})")  # fmt: skip


def cell_probe_units(
    cfg: BenchmarkConfig, plan: CellPlan, rows: dict[str, DatasetRows], d: int, k: int
) -> ProbeUnits:
    """Units of one cell's probes with ``d`` features and ``k`` classes or labels."""
    ds = rows[plan.dataset]
    n, seeds = ds.n_train, len(cfg.seeds)
    partial = sum(f for f in cfg.fractions if f != 1.0)
    full = 1 if 1.0 in cfg.fractions else 0
    layers = sum(1 for depth in cfg.layers if depth != 1.0)
    m = len(cfg.probes.logistic.c_grid)
    logistic = d * k * m * n * (seeds * partial + full + layers)
    mlp = knn = 0.0
    if cfg.probes.mlp is not None:
        h = cfg.probes.mlp.hidden_size
        mlp = seeds * sum(cfg.fractions) * n * cfg.probes.mlp.epochs * (d * h + h * k)
    if cfg.probes.knn is not None:
        extra = ds.n_test * len(plan.conditions) + sum(rows[t].n_eval for t in plan.shift_targets)
        queries = sum(f * (ds.n_test + (extra if f == 1.0 else 0)) for f in cfg.fractions)
        knn = seeds * queries * n * d
    return ProbeUnits(float(logistic), float(mlp), float(knn))


def _time_logistic(n: int, c_grid: list[float], tol: float, rng: np.random.Generator) -> float:
    """Seconds of one :func:`~crsbench.probes.fit_probe_grid` call on ``n`` synthetic rows."""
    from crsbench.probes import fit_probe_grid

    d, k = MEASURE_DIM, MEASURE_CLASSES
    w = rng.standard_normal((d, k)) / np.sqrt(d)
    X = rng.standard_normal((n + n // 4, d)).astype(np.float32)
    y = (X @ w + rng.gumbel(size=(len(X), k))).argmax(axis=1)
    t0 = time.perf_counter()
    fit_probe_grid(X[:n], y[:n], X[n:], y[n:], "multiclass", Cs=np.asarray(c_grid),
                   n_outputs=k, tol=tol)  # fmt: skip
    return time.perf_counter() - t0


def _time_controls(cfg: BenchmarkConfig, rng: np.random.Generator) -> tuple[float, float]:
    """Seconds per unit of a short MLP fit (2 epochs) and of a kNN fit + prediction."""
    from crsbench.probes import KNNProbe, MLPProbe

    n, d, k = MEASURE_ROWS[1], MEASURE_DIM, MEASURE_CLASSES
    X = rng.standard_normal((n, d)).astype(np.float32)
    y = rng.integers(0, k, n)
    h = cfg.probes.mlp.hidden_size if cfg.probes.mlp is not None else 256
    t0 = time.perf_counter()
    MLPProbe(hidden_size=h, epochs=2, patience=10, n_outputs=k).fit(X, y, X[:200], y[:200])
    mlp = (time.perf_counter() - t0) / (2 * n * (d * h + h * k))
    t0 = time.perf_counter()
    KNNProbe(n_outputs=k).fit(X, y).predict_proba(X[: n // 2])
    knn = (time.perf_counter() - t0) / ((n // 2) * n * d)
    return mlp, knn


def measure_probe_rates(cfg: BenchmarkConfig) -> tuple[ProbeRates, ScalingCheck]:
    """Seconds per unit of each probe on this machine, from short timed fits on one BLAS
    thread, and the logistic scaling check (two sizes).

    The logistic rate is taken from the larger fit (``MEASURE_ROWS[1]`` rows, the config's C
    grid, ``MEASURE_DIM`` features, ``MEASURE_CLASSES`` classes, synthetic data).
    """
    from threadpoolctl import threadpool_limits

    from crsbench.protocol import PROBE_BLAS_THREADS

    rng = np.random.default_rng(0)
    c_grid = list(cfg.probes.logistic.c_grid)
    with threadpool_limits(limits=PROBE_BLAS_THREADS, user_api="blas"):
        tol = cfg.probes.logistic.tol
        _time_logistic(200, c_grid, tol, rng)  # warm-up: imports, allocator
        secs = tuple(_time_logistic(n, c_grid, tol, rng) for n in MEASURE_ROWS)
        mlp, knn = _time_controls(cfg, rng)
    units = MEASURE_ROWS[1] * MEASURE_DIM * MEASURE_CLASSES * len(c_grid)
    rates = ProbeRates(secs[1] / units, mlp, knn, "measured on this machine")
    return rates, ScalingCheck(MEASURE_ROWS, (secs[0], secs[1]))
