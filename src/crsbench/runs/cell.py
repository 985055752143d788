"""Evaluate one cell (encoder × dataset) from cached features: arrays in, run rows out.

This is the probe task of the runner: it never touches pixels, torch or the store, so the
local and the Ray executors run exactly the same function. Every row it returns is one run
record's identity and metric values (PROTOCOL.md section 7); provenance is added by the
caller.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from crsbench.metrics import (
    brier_score,
    expected_calibration_error,
    macro_auroc,
    negative_log_likelihood,
    sensitivity_at_specificity,
)
from crsbench.probes import KNNProbe, MLPProbe, fit_probe_grid


@dataclass(frozen=True)
class ShiftData:
    """Clean features and labels of a shift target's evaluation rows."""

    target: str
    X: np.ndarray
    y: np.ndarray


@dataclass(frozen=True)
class CellData:
    """Everything one cell needs: labels, split indices and features (no pixels).

    Attributes
    ----------
    features : mapping depth → (N, D) array
        Clean features of every row of the dataset, per layer depth.
    perturbed : mapping (name, severity) → (n_test, D) array
        Depth-1.0 features of the test rows (in ``test`` order) under each condition.
    subsets : mapping (fraction, seed) → index array into ``train``
        Nested label subsamples.
    """

    encoder: str
    dataset: str
    task: str
    n_outputs: int
    labels: np.ndarray
    train: np.ndarray
    val: np.ndarray
    calib: np.ndarray
    test: np.ndarray
    features: Mapping[float, np.ndarray]
    perturbed: Mapping[tuple[str, int], np.ndarray]
    subsets: Mapping[tuple[float, int], np.ndarray]
    shift: ShiftData | None = None


@dataclass(frozen=True)
class CellSettings:
    """The probe budget and what to evaluate; the same for every encoder."""

    seeds: Sequence[int]
    fractions: Sequence[float]
    Cs: Sequence[float]
    max_iter: int = 1000
    tol: float = 1e-6
    layers: Sequence[float] = (1.0,)
    recalibrators: Sequence[str] = ()
    mlp: Mapping[str, Any] | None = None
    knn: Mapping[str, Any] | None = None
    control_fractions: Sequence[float] = (1.0,)
    extra: Mapping[str, Any] = field(default_factory=dict)


def targets(labels: np.ndarray, task: str) -> np.ndarray:
    """Class indices (multiclass, from one-hot rows) or the 0/1/NaN matrix (multilabel)."""
    if task == "multiclass":
        return np.argmax(np.nan_to_num(labels, nan=-1.0), axis=1).astype(np.int64)
    return np.asarray(labels, dtype=np.float64)


def score(y_true: np.ndarray, prob: np.ndarray, task: str) -> dict[str, Any]:
    """Every stored metric of one prediction, plus which labels were excluded and why."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        det = macro_auroc(y_true, prob, task, return_details=True)
        out: dict[str, Any] = {
            "auroc": float(det.value),
            "ece": float(expected_calibration_error(y_true, prob, task, n_bins=15)),
            "brier": float(brier_score(y_true, prob, task)),
            "nll": float(negative_log_likelihood(y_true, prob, task)),
            "sens_at_spec90": float(sensitivity_at_specificity(y_true, prob, task, 0.90)),
            "sens_at_spec95": float(sensitivity_at_specificity(y_true, prob, task, 0.95)),
        }
    details: dict[str, Any] = {
        "n_eval": int(len(prob)),
        "excluded": {str(k): v for k, v in det.excluded.items()},
        "n_pos": [int(x) for x in det.n_pos],
    }
    if det.suspicious:
        details["suspicious_auroc_0.5"] = list(det.suspicious)
    if caught:
        details["warnings"] = sorted({str(w.message)[:200] for w in caught})
    out["details"] = details
    return out


def _row(
    cell: CellData,
    seed: int,
    probe: str,
    layer: float,
    fraction: float,
    condition: str = "clean",
    severity: int = 0,
    recalibrator: str = "none",
    eval_dataset: str | None = None,
) -> dict[str, Any]:
    return {
        "encoder": cell.encoder,
        "dataset": cell.dataset,
        "eval_dataset": eval_dataset or cell.dataset,
        "seed": int(seed),
        "regime": "frozen",
        "probe": probe,
        "layer": float(layer),
        "fraction": float(fraction),
        "condition": condition,
        "severity": int(severity),
        "recalibrator": recalibrator,
    }


def _emit(
    rows: list[dict[str, Any]],
    ident: dict[str, Any],
    y: np.ndarray,
    prob: np.ndarray,
    task: str,
    extra: Mapping[str, Any],
    t0: float,
) -> None:
    metrics = score(y, prob, task)
    metrics["details"].update(extra)
    rows.append({**ident, **metrics, "wall_time_s": time.perf_counter() - t0})


def _conditions(
    cell: CellData,
    seed: int,
    probe: str,
    predict,
    y: np.ndarray,
    rows: list[dict[str, Any]],
    extra: Mapping[str, Any],
) -> None:
    """Rows of a full-label model on every perturbed condition and the shift target."""
    for (name, sev), X in cell.perturbed.items():
        t0 = time.perf_counter()
        _emit(
            rows,
            _row(cell, seed, probe, 1.0, 1.0, name, sev),
            y[cell.test],
            predict(X),
            cell.task,
            extra,
            t0,
        )
    if cell.shift is not None:
        t0 = time.perf_counter()
        _emit(
            rows,
            _row(cell, seed, probe, 1.0, 1.0, "shift", 0, eval_dataset=cell.shift.target),
            targets(cell.shift.y, cell.task),
            predict(cell.shift.X),
            cell.task,
            extra,
            t0,
        )


def _logistic(cell: CellData, s: CellSettings, y: np.ndarray, rows: list[dict[str, Any]]) -> None:
    X = cell.features[1.0]
    subsets = {(f, seed): cell.subsets[(f, seed)] for seed in s.seeds for f in s.fractions}
    t0 = time.perf_counter()
    fits = fit_probe_grid(
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
    )
    fit_time = (time.perf_counter() - t0) / max(1, len(fits))  # goes to wall_time_s only
    for (f, seed), fit in fits.items():
        extra = {
            "C": fit.C,
            "n_train": fit.n_rows,
            "n_iter": fit.n_iter,
            "converged": bool(np.all(fit.converged)),
            "flags": list(fit.flags),
            "skipped": {str(k): v for k, v in fit.skipped.items()},
        }
        t1 = time.perf_counter() - fit_time
        _emit(
            rows,
            _row(cell, seed, "logistic", 1.0, f),
            y[cell.test],
            fit.predict_proba(X[cell.test]),
            cell.task,
            extra,
            t1,
        )
        if f != 1.0:
            continue
        _conditions(cell, seed, "logistic", fit.predict_proba, y, rows, extra)
        _recalibrated(cell, s, seed, fit.predict_proba, y, rows, extra)


def _recalibrated(
    cell: CellData,
    s: CellSettings,
    seed: int,
    predict,
    y: np.ndarray,
    rows: list[dict[str, Any]],
    extra: Mapping[str, Any],
) -> None:
    """Rows of the full-label logistic probe after each post-hoc recalibrator."""
    if not s.recalibrators:
        return
    from crsbench.calibration import CALIBRATORS

    X = cell.features[1.0]
    p_cal, p_test = predict(X[cell.calib]), predict(X[cell.test])
    for name in s.recalibrators:
        t0 = time.perf_counter()
        cal = CALIBRATORS.get(name)(task=cell.task)
        cal.fit(p_cal, y[cell.calib])
        _emit(
            rows,
            _row(cell, seed, "logistic", 1.0, 1.0, recalibrator=name),
            y[cell.test],
            cal.predict_proba(p_test),
            cell.task,
            {**extra, "n_calib": len(cell.calib)},
            t0,
        )
        if cell.shift is not None:
            t1 = time.perf_counter()
            _emit(
                rows,
                _row(
                    cell,
                    seed,
                    "logistic",
                    1.0,
                    1.0,
                    "shift",
                    0,
                    name,
                    eval_dataset=cell.shift.target,
                ),
                targets(cell.shift.y, cell.task),
                cal.predict_proba(predict(cell.shift.X)),
                cell.task,
                extra,
                t1,
            )


def _layers(cell: CellData, s: CellSettings, y: np.ndarray, rows: list[dict[str, Any]]) -> None:
    """Full-label logistic probes on the intermediate taps (clean test only)."""
    for depth in s.layers:
        if depth == 1.0:
            continue
        X = cell.features[depth]
        subsets = {seed: cell.subsets[(1.0, seed)] for seed in s.seeds}
        t0 = time.perf_counter()
        fits = fit_probe_grid(
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
        )
        for seed, fit in fits.items():
            _emit(
                rows,
                _row(cell, seed, "logistic", depth, 1.0),
                y[cell.test],
                fit.predict_proba(X[cell.test]),
                cell.task,
                {"C": fit.C, "n_iter": fit.n_iter},
                t0,
            )
            t0 = time.perf_counter()


def _controls(cell: CellData, s: CellSettings, y: np.ndarray, rows: list[dict[str, Any]]) -> None:
    """MLP and kNN control probes: the same splits, seeds and label subsamples."""
    X = cell.features[1.0]
    makers = []
    if s.knn is not None:
        makers.append(
            ("knn", lambda seed: KNNProbe(task=cell.task, n_outputs=cell.n_outputs, **dict(s.knn)))
        )
    if s.mlp is not None:
        makers.append(
            (
                "mlp",
                lambda seed: MLPProbe(
                    task=cell.task, n_outputs=cell.n_outputs, random_state=seed, **dict(s.mlp)
                ),
            )
        )
    for name, make in makers:
        for seed in s.seeds:
            for f in s.control_fractions:
                t0 = time.perf_counter()
                rows_idx = cell.train[cell.subsets[(f, seed)]]
                model = make(seed)
                if name == "mlp":
                    model.fit(X[rows_idx], y[rows_idx], X[cell.val], y[cell.val])
                else:
                    model.fit(X[rows_idx], y[rows_idx])
                extra = {"n_train": int(len(rows_idx))}
                _emit(
                    rows,
                    _row(cell, seed, name, 1.0, f),
                    y[cell.test],
                    model.predict_proba(X[cell.test]),
                    cell.task,
                    extra,
                    t0,
                )
                if f == 1.0:
                    _conditions(cell, seed, name, model.predict_proba, y, rows, extra)


def evaluate_cell(cell: CellData, settings: CellSettings) -> list[dict[str, Any]]:
    """Fit every probe of one cell and evaluate every condition; return the run rows.

    Parameters
    ----------
    cell : CellData
        Labels, splits, subsamples and features of one (encoder, dataset).
    settings : CellSettings
        Seeds, fractions, C grid and budget, layers, recalibrators, control probes.

    Returns
    -------
    list of dict
        One dict per run: identity columns, ``auroc``, ``ece``, ``brier``, ``nll``,
        ``sens_at_spec90``, ``sens_at_spec95``, ``details`` and ``wall_time_s``.
    """
    y = targets(cell.labels, cell.task)
    rows: list[dict[str, Any]] = []
    _logistic(cell, settings, y, rows)
    _layers(cell, settings, y, rows)
    _controls(cell, settings, y, rows)
    return rows
