"""Evaluate one cell (encoder × dataset) from cached features: arrays in, run results out.

This is the probe task of the runner: it never touches pixels, torch or the store, so the
local and the Ray executors run exactly the same function. Every
:class:`~crsbench.store.run_result.RunResult` it returns is one run record's identity, metric
values and typed details (docs/protocol.md section 12); provenance is added by the caller.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any

import numpy as np

from crsbench.evaluation.cell_data import CellData, CellRun, CellSettings, FittedProbe, ShiftData
from crsbench.evaluation.cell_recal import recalibrated_rows
from crsbench.evaluation.cell_scoring import (
    Evaluation,
    Lazy,
    RowScorer,
    model_key,
    score,
    shift_details,
    targets,
)
from crsbench.evaluation.identity import CellIdentity, RunIdentity
from crsbench.evaluation.prediction_keeper import cell_keeper, shift_split
from crsbench.probes import FittedLinear, KNNProbe, MLPProbe, fit_probe_grid
from crsbench.protocol import CLEAN, PROBE_BLAS_THREADS
from crsbench.store.details import ControlFit, LayerFit, LogisticFit, RunDetails
from crsbench.store.prediction_layout import EVAL_SPLIT, VAL_SPLIT
from crsbench.store.run_result import RunResult

__all__ = ["CellData", "CellSettings", "ShiftData", "evaluate_cell", "probe_numerics", "score",
           "targets"]  # fmt: skip


def probe_numerics() -> AbstractContextManager:
    """The numeric settings every probe fit runs under, in the run and in the export's refit.

    BLAS and OpenMP pools on :data:`crsbench.protocol.PROBE_BLAS_THREADS` threads (through
    ``threadpoolctl``), as in the run's worker processes, whatever the core count or the
    ``OMP_NUM_THREADS`` of the process: a threaded matrix product sums in another order, so a
    fit outside this context may differ from the stored run by more than the export's check
    allows. The dtypes are the probe's own (:func:`crsbench.probes.fit_probe_grid` on the
    cached features), the same in both.

    Returns
    -------
    contextlib.AbstractContextManager
        Restores the previous limits on exit.
    """
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=PROBE_BLAS_THREADS)


def _conditions(run: CellRun, model: FittedProbe, keep: bool) -> list[RunResult]:
    """Results of a full-label model on every perturbed condition and every shift target
    (``keep``: keep their predictions)."""
    cell, predict, rows = run.cell, model.predict, []
    for (name, sev), X in cell.perturbed.items():
        ident = run.ids.run(model.seed, probe=model.probe, condition=name, severity=sev)
        key = (model.mkey, name, sev)
        on_x = lambda X=X: predict(X)  # noqa: E731
        got = run.scorer(Evaluation(ident, run.y_test, on_x, model.extra, time.perf_counter(), key))
        res = run.keeper.keep(got.result, EVAL_SPLIT, key, got.prob, on_x) if keep else got.result
        rows.append(res)
    clean = Lazy(lambda: predict(cell.features[1.0][cell.test]))
    for sh in cell.shifts:
        t0 = time.perf_counter()
        key = (model.mkey, "shift", sh.target)
        on_sh = lambda sh=sh: predict(sh.X)  # noqa: E731
        extra = lambda sh=sh: model.extra.merged(shift_details(sh, run.y_test, clean))  # noqa: E731
        ident = run.ids.shift(model.seed, model.probe, sh.target)
        got = run.scorer(Evaluation(ident, targets(sh.y, cell.task), on_sh, extra, t0, key))
        res = (
            run.keeper.keep(got.result, shift_split(sh.target), key, got.prob, on_sh)
            if keep
            else got.result
        )
        rows.append(res)
    return rows


def _fit_grid(
    run: CellRun, X: np.ndarray, subsets: Mapping[Any, np.ndarray]
) -> dict[Any, FittedLinear]:
    """The batched logistic engine on the cell's train/validation rows, with the budget."""
    cell, s, y = run.cell, run.settings, run.y
    return fit_probe_grid(
        X[cell.train],
        y[cell.train],
        X[cell.val],
        y[cell.val],
        cell.task,
        Cs=np.asarray(s.Cs),
        subsets=subsets,
        n_outputs=cell.n_outputs,
        max_iter=s.max_iter,
        tol=s.tol,
        stop=s.stop,
    )


def _fit_details(fit: FittedLinear) -> RunDetails:
    """What a logistic row records of its fit (chosen C and its validation AUROC, training
    rows, convergence)."""
    return RunDetails(fit=LogisticFit(
        C=fit.C,
        val_auroc=_finite_or_none(fit.chosen_val_auroc),
        n_train=fit.n_rows,
        n_iter=fit.n_iter,
        converged=bool(np.all(fit.converged)),
        flags=tuple(fit.flags),
        skipped={str(k): v for k, v in fit.skipped.items()},
    ))  # fmt: skip


def _finite_or_none(value: float) -> float | None:
    """``value``, or ``None`` (JSON null) when it is NaN: details hold no NaN."""
    return float(value) if np.isfinite(value) else None


def _logistic(run: CellRun) -> list[RunResult]:
    """The main probe at every (fraction, seed); at the full fraction also every condition,
    shift target and recalibrator."""
    cell, s = run.cell, run.settings
    X = cell.features[1.0]
    subsets = {(f, seed): cell.subsets[(f, seed)] for seed in s.seeds for f in s.fractions}
    t0 = time.perf_counter()
    fits = _fit_grid(run, X, subsets)
    fit_time = (time.perf_counter() - t0) / max(1, len(fits))  # goes to wall_time_s only
    rows: list[RunResult] = []
    for (f, seed), fit in fits.items():
        model = FittedProbe(seed, "logistic", fit.predict_proba, _fit_details(fit),
                            model_key("logistic", fit.coef, fit.intercept))  # fmt: skip
        on_test = lambda fit=fit: fit.predict_proba(X[cell.test])  # noqa: E731
        key = (model.mkey, CLEAN)
        ev = Evaluation(run.ids.run(seed, fraction=f), run.y_test, on_test, model.extra,
                        time.perf_counter() - fit_time, key, bins=f == 1.0)  # fmt: skip
        got = run.scorer(ev)
        res = run.keeper.keep(got.result, EVAL_SPLIT, key, got.prob, on_test)
        if f != 1.0:
            rows.append(res)
            continue
        on_val = lambda fit=fit: fit.predict_proba(X[cell.val])  # noqa: E731
        rows.append(run.keeper.keep(res, VAL_SPLIT, (model.mkey, "val"), None, on_val))
        rows += _conditions(run, model, keep=True)
        rows += _recalibrated(run, model)
    return rows


def _recalibrated(run: CellRun, model: FittedProbe) -> list[RunResult]:
    """Rows of the full-label logistic probe after each post-hoc recalibrator."""
    if not run.settings.recalibrators:
        return []

    def ident(name: str, target: str | None) -> RunIdentity:
        if target is None:
            return run.ids.run(model.seed, recalibrator=name)
        return run.ids.shift(model.seed, "logistic", target, name)

    return recalibrated_rows(run, model, ident)


def _layers(run: CellRun) -> list[RunResult]:
    """Full-label logistic probes on the intermediate taps (clean test only)."""
    cell, s = run.cell, run.settings
    rows: list[RunResult] = []
    for depth in s.layers:
        if depth == 1.0:
            continue
        X = cell.features[depth]
        subsets = {seed: cell.subsets[(1.0, seed)] for seed in s.seeds}
        t0 = time.perf_counter()
        fits = _fit_grid(run, X, subsets)
        for seed, fit in fits.items():
            mkey = model_key("layer", depth, fit.coef, fit.intercept)
            on_test = lambda fit=fit, X=X: fit.predict_proba(X[cell.test])  # noqa: E731
            extra = RunDetails(fit=LayerFit(C=fit.C, n_iter=fit.n_iter,
                                            val_auroc=_finite_or_none(fit.chosen_val_auroc)))  # fmt: skip
            ident = run.ids.run(seed, layer=depth)
            rows.append(run.scorer(Evaluation(ident, run.y_test, on_test, extra, t0,
                                              (mkey, CLEAN))).result)  # fmt: skip
            t0 = time.perf_counter()
    return rows


class _ControlModel:
    """A control probe fitted on first use (kNN is deterministic given its rows, so seeds
    sharing rows share its scores; the MLP's initialisation depends on the seed)."""

    def __init__(self, run: CellRun, name: str, params: Mapping[str, Any], seed: int,
                 rows: np.ndarray) -> None:  # fmt: skip
        self.run, self.name, self.params, self.seed, self.rows = run, name, params, seed, rows
        self._model: KNNProbe | MLPProbe | None = None

    def _fitted(self) -> KNNProbe | MLPProbe:
        if self._model is None:
            cell, X, y = self.run.cell, self.run.cell.features[1.0], self.run.y
            if self.name == "mlp":
                m: KNNProbe | MLPProbe = MLPProbe(task=cell.task, n_outputs=cell.n_outputs,
                                                  random_state=self.seed, **dict(self.params))  # fmt: skip
                m.fit(X[self.rows], y[self.rows], X[cell.val], y[cell.val])
            else:
                m = KNNProbe(task=cell.task, n_outputs=cell.n_outputs, **dict(self.params))
                m.fit(X[self.rows], y[self.rows])
            self._model = m
        return self._model

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """Probabilities of the fitted control probe on ``X``."""
        return self._fitted().predict_proba(X)


def _controls(run: CellRun) -> list[RunResult]:
    """MLP and kNN control probes: the same splits, seeds and label subsamples."""
    cell, s = run.cell, run.settings
    X = cell.features[1.0]
    rows: list[RunResult] = []
    for name, params in (("knn", s.knn), ("mlp", s.mlp)):
        if params is None:
            continue
        for seed in s.seeds:
            for f in s.control_fractions:
                t0 = time.perf_counter()
                rows_idx = cell.train[cell.subsets[(f, seed)]]
                mkey = model_key(name, rows_idx, seed if name == "mlp" else None)
                m = _ControlModel(run, name, params, seed, rows_idx)
                extra = RunDetails(fit=ControlFit(n_train=int(len(rows_idx))))
                on_test = lambda m=m: m.predict_proba(X[cell.test])  # noqa: E731
                ident = run.ids.run(seed, probe=name, fraction=f)
                rows.append(run.scorer(Evaluation(ident, run.y_test, on_test, extra, t0,
                                                  (mkey, CLEAN))).result)  # fmt: skip
                if f == 1.0:
                    model = FittedProbe(seed, name, m.predict_proba, extra, mkey)
                    rows += _conditions(run, model, keep=False)
    return rows


def evaluate_cell(cell: CellData, settings: CellSettings) -> list[RunResult]:
    """Fit every probe of one cell and evaluate every condition; return the run results.

    BLAS runs on :data:`crsbench.protocol.PROBE_BLAS_THREADS` threads meanwhile, so the rows
    are the same on any machine and in any executor.

    Parameters
    ----------
    cell : CellData
        Labels, splits, subsamples and features of one (encoder, dataset).
    settings : CellSettings
        Seeds, fractions, C grid and budget, layers, recalibrators, control probes.

    Returns
    -------
    list of RunResult
        One per run, in the order :func:`crsbench.runs.plan.cell_identities` plans them:
        identity, metric values, typed details (every one carrying the cell's
        ``n_quarantined`` when it left images out), wall time and, for the main-protocol
        runs, the per-sample predictions.
    """
    y = targets(cell.labels, cell.task)
    ids = CellIdentity(cell.encoder, cell.dataset)
    run = CellRun(cell, settings, y, RowScorer(cell.task), cell_keeper(cell, y), ids)
    with probe_numerics():  # same numbers anywhere, and in the export's refit
        rows = _logistic(run) + _layers(run) + _controls(run)
    if cell.n_quarantined:
        counts = dict(cell.n_quarantined)
        rows = [r.with_details(n_quarantined=counts) for r in rows]
    return rows
