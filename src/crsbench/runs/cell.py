"""Evaluate one cell (encoder × dataset) from cached features: arrays in, run rows out.

This is the probe task of the runner: it never touches pixels, torch or the store, so the
local and the Ray executors run exactly the same function. Every row it returns is one run
record's identity and metric values (docs/protocol.md section 12); provenance is added by the
caller.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from crsbench.probes import KNNProbe, MLPProbe, fit_probe_grid
from crsbench.runs.cell_scoring import Lazy, emit, model_key, score, shift_reference, targets
from crsbench.runs.prediction_keeper import PredictionKeeper, cell_keeper, shift_split
from crsbench.store.prediction_layout import EVAL_SPLIT, VAL_SPLIT

__all__ = ["CellData", "CellSettings", "ShiftData", "evaluate_cell", "score", "targets"]


@dataclass(frozen=True)
class ShiftData:
    """Clean features and labels of a shift target's evaluation rows.

    ``details`` go into every shift record's ``details`` (``shift_rows``: which rows, how many
    images and patients). ``compared`` is the mask of the label columns both sides provide when
    it leaves out a label the source provides (``y`` is then NaN outside it, and each record
    also carries the source's clean AUROC on those labels, see
    :mod:`crsbench.core.shift_labels`); ``None`` when every source label is compared.
    """

    target: str
    X: np.ndarray
    y: np.ndarray
    details: Mapping[str, Any] = field(default_factory=dict)
    image_ids: np.ndarray | None = None
    groups: np.ndarray | None = None
    compared: np.ndarray | None = None
    label_names: tuple[str, ...] = ()
    metadata: Mapping[str, np.ndarray] | None = None


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
    shifts : tuple of ShiftData
        The shift targets of this cell's dataset, in the config's order.
    n_quarantined : mapping split → int
        Undecodable images left out per split (``shift``: the target's rows); every run
        row of the cell carries it in ``details["n_quarantined"]``.
    quarantined : tuple of dict
        Those images (``dataset``, ``split``, ``image_id``, ``path``, ``error_class``, ``message``).
    image_ids, groups : (N,) arrays or None
        Image id and patient group of every row; with them the main-protocol rows keep their
        per-sample predictions (:mod:`crsbench.runs.prediction_keeper`).
    metadata : mapping attribute → (N,) array of str, or None
        Subgroup attributes of every row (:func:`crsbench.datasets.subgroups.subgroup_columns`),
        stored with the predictions.
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
    shifts: tuple[ShiftData, ...] = ()
    n_quarantined: Mapping[str, int] = field(default_factory=dict)
    quarantined: tuple[Mapping[str, str], ...] = ()
    image_ids: np.ndarray | None = None
    groups: np.ndarray | None = None
    metadata: Mapping[str, np.ndarray] | None = None


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


def _conditions(
    cell: CellData,
    seed: int,
    probe: str,
    predict: Any,
    y: np.ndarray,
    rows: list[dict[str, Any]],
    extra: Mapping[str, Any],
    memo: dict[Any, dict[str, Any]],
    mkey: str | None,
    keeper: PredictionKeeper | None = None,
) -> None:
    """Rows of a full-label model on every perturbed condition and every shift target
    (``keeper``: keep their predictions)."""
    for (name, sev), X in cell.perturbed.items():
        t0 = time.perf_counter()
        ident = _row(cell, seed, probe, 1.0, 1.0, name, sev)
        key = None if mkey is None else (mkey, name, sev)
        p = emit(rows, ident, y[cell.test], lambda X=X: predict(X), cell.task, extra, t0, memo, key)
        if keeper is not None:
            keeper.keep(rows[-1], EVAL_SPLIT, key, p, lambda X=X: predict(X))
    clean = Lazy(lambda: predict(cell.features[1.0][cell.test]))
    for sh in cell.shifts:
        t0 = time.perf_counter()
        ident = _row(cell, seed, probe, 1.0, 1.0, "shift", 0, eval_dataset=sh.target)
        key = None if mkey is None else (mkey, "shift", sh.target)
        p = emit(
            rows,
            ident,
            targets(sh.y, cell.task),
            lambda sh=sh: predict(sh.X),
            cell.task,
            lambda sh=sh: {**extra, **sh.details, **shift_reference(sh, y[cell.test], clean)},
            t0,
            memo,
            key,
        )
        if keeper is not None:
            keeper.keep(rows[-1], shift_split(sh.target), key, p, lambda sh=sh: predict(sh.X))


def _fit_grid(
    cell: CellData, s: CellSettings, X: np.ndarray, y: np.ndarray, subsets: Mapping[Any, np.ndarray]
) -> dict[Any, Any]:
    """The batched logistic engine on the cell's train/validation rows, with the budget."""
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
    )


def _logistic(
    cell: CellData,
    s: CellSettings,
    y: np.ndarray,
    rows: list[dict[str, Any]],
    memo: dict[Any, dict[str, Any]],
) -> None:
    X = cell.features[1.0]
    subsets = {(f, seed): cell.subsets[(f, seed)] for seed in s.seeds for f in s.fractions}
    t0 = time.perf_counter()
    fits = _fit_grid(cell, s, X, y, subsets)
    fit_time = (time.perf_counter() - t0) / max(1, len(fits))  # goes to wall_time_s only
    keeper = cell_keeper(cell, y)
    for (f, seed), fit in fits.items():
        extra = {
            "C": fit.C,
            "n_train": fit.n_rows,
            "n_iter": fit.n_iter,
            "converged": bool(np.all(fit.converged)),
            "flags": list(fit.flags),
            "skipped": {str(k): v for k, v in fit.skipped.items()},
        }
        mkey = model_key("logistic", fit.coef, fit.intercept)
        t1 = time.perf_counter() - fit_time
        on_test = lambda fit=fit: fit.predict_proba(X[cell.test])  # noqa: E731
        p = emit(rows, _row(cell, seed, "logistic", 1.0, f), y[cell.test], on_test, cell.task,
                 extra, t1, memo, (mkey, "clean"), bins=f == 1.0)  # fmt: skip
        keeper.keep(rows[-1], EVAL_SPLIT, (mkey, "clean"), p, on_test)
        if f != 1.0:
            continue
        on_val = lambda fit=fit: fit.predict_proba(X[cell.val])  # noqa: E731
        keeper.keep(rows[-1], VAL_SPLIT, (mkey, "val"), None, on_val)
        _conditions(cell, seed, "logistic", fit.predict_proba, y, rows, extra, memo, mkey, keeper)
        _recalibrated(cell, s, seed, fit.predict_proba, y, rows, extra, memo, mkey)


def _recalibrated(
    cell: CellData,
    s: CellSettings,
    seed: int,
    predict: Any,
    y: np.ndarray,
    rows: list[dict[str, Any]],
    extra: Mapping[str, Any],
    memo: dict[Any, dict[str, Any]],
    mkey: str,
) -> None:
    """Rows of the full-label logistic probe after each post-hoc recalibrator."""
    if not s.recalibrators:
        return
    from crsbench.runs.cell_recal import recalibrated_rows

    def ident(name: str, target: str | None) -> dict[str, Any]:
        if target is None:
            return _row(cell, seed, "logistic", 1.0, 1.0, recalibrator=name)
        return _row(cell, seed, "logistic", 1.0, 1.0, "shift", 0, name, eval_dataset=target)

    recalibrated_rows(cell, s.recalibrators, ident, seed, predict, y, rows, extra, memo, mkey)


def _layers(
    cell: CellData,
    s: CellSettings,
    y: np.ndarray,
    rows: list[dict[str, Any]],
    memo: dict[Any, dict[str, Any]],
) -> None:
    """Full-label logistic probes on the intermediate taps (clean test only)."""
    for depth in s.layers:
        if depth == 1.0:
            continue
        X = cell.features[depth]
        subsets = {seed: cell.subsets[(1.0, seed)] for seed in s.seeds}
        t0 = time.perf_counter()
        fits = _fit_grid(cell, s, X, y, subsets)
        for seed, fit in fits.items():
            mkey = model_key("layer", depth, fit.coef, fit.intercept)
            emit(
                rows,
                _row(cell, seed, "logistic", depth, 1.0),
                y[cell.test],
                lambda fit=fit, X=X: fit.predict_proba(X[cell.test]),
                cell.task,
                {"C": fit.C, "n_iter": fit.n_iter},
                t0,
                memo,
                (mkey, "clean"),
            )
            t0 = time.perf_counter()


def _controls(
    cell: CellData,
    s: CellSettings,
    y: np.ndarray,
    rows: list[dict[str, Any]],
    memo: dict[Any, dict[str, Any]],
) -> None:
    """MLP and kNN control probes: the same splits, seeds and label subsamples.

    kNN is deterministic given its training rows, so seeds sharing rows share its results;
    the MLP's initialisation depends on the seed, so each seed is fitted.
    """
    X = cell.features[1.0]
    for name, params in (("knn", s.knn), ("mlp", s.mlp)):
        if params is None:
            continue
        for seed in s.seeds:
            for f in s.control_fractions:
                t0 = time.perf_counter()
                rows_idx = cell.train[cell.subsets[(f, seed)]]
                mkey = model_key(name, rows_idx, seed if name == "mlp" else None)
                models: list[Any] = []

                def model(
                    name: str = name,
                    rows_idx: np.ndarray = rows_idx,
                    seed: int = seed,
                    params: Mapping[str, Any] = params,
                    models: list[Any] = models,
                ) -> Any:
                    if not models:
                        if name == "mlp":
                            m = MLPProbe(
                                task=cell.task,
                                n_outputs=cell.n_outputs,
                                random_state=seed,
                                **dict(params),
                            )
                            m.fit(X[rows_idx], y[rows_idx], X[cell.val], y[cell.val])
                        else:
                            m = KNNProbe(task=cell.task, n_outputs=cell.n_outputs, **dict(params))
                            m.fit(X[rows_idx], y[rows_idx])
                        models.append(m)
                    return models[0]

                extra = {"n_train": int(len(rows_idx))}
                emit(
                    rows,
                    _row(cell, seed, name, 1.0, f),
                    y[cell.test],
                    lambda m=model: m().predict_proba(X[cell.test]),
                    cell.task,
                    extra,
                    t0,
                    memo,
                    (mkey, "clean"),
                )
                if f == 1.0:
                    _conditions(
                        cell,
                        seed,
                        name,
                        lambda Z, m=model: m().predict_proba(Z),
                        y,
                        rows,
                        extra,
                        memo,
                        mkey,
                    )


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
    memo: dict[Any, dict[str, Any]] = {}
    _logistic(cell, settings, y, rows, memo)
    _layers(cell, settings, y, rows, memo)
    _controls(cell, settings, y, rows, memo)
    if cell.n_quarantined:
        counts = dict(cell.n_quarantined)
        for row in rows:
            row["details"] = {**row.get("details", {}), "n_quarantined": counts}
    return rows
