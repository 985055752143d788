"""Run results of the full-label logistic probe after each post-hoc recalibrator.

Each recalibrator is fitted on the calibration split by
:func:`crsbench.calibration.fit_recalibrator` (regularisation chosen by cross-validation with
the row's seed, identity map kept unless it wins); its choice is recorded in the row's
details (``recal_choice`` and ``recal``). A calibration split below the protocol's minimum
gives results whose metrics are NaN with the reason in ``details["undefined"]``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from crsbench.calibration import CalibrationSplitTooSmall, fit_recalibrator, load_recal_protocol
from crsbench.evaluation.cell_data import CellRun, FittedProbe
from crsbench.evaluation.cell_scoring import (
    Evaluation,
    Lazy,
    RowScorer,
    shift_details,
    targets,
)
from crsbench.evaluation.identity import RunIdentity
from crsbench.protocol import CLEAN
from crsbench.store.columns import METRIC_COLUMNS
from crsbench.store.details import JsonObject, RecalDetails, RunDetails
from crsbench.store.run_result import RunResult

#: A recalibrated row's identity from (recalibrator, shift target or None for the test rows).
FrozenIdent = Callable[[str, str | None], RunIdentity]


def _recal_details(base: RunDetails, n_calib: int, record: JsonObject, choice: str) -> RunDetails:
    """``base`` with the recalibration section (calibration rows, the fit's record, its choice)."""
    return replace(base, recal=RecalDetails(n_calib=n_calib, recal=record, recal_choice=choice))


def _undefined_record(seed: int) -> JsonObject:
    """The recalibration record of a calibration split below the protocol's minimum."""
    return {**load_recal_protocol().summary(), "seed": int(seed), "choice": "undefined"}


def _undefined_frozen(
    run: CellRun, model: FittedProbe, name: str, ident: FrozenIdent, exc: Exception, t0: float
) -> list[RunResult]:
    """NaN results (test and every shift target) of a recalibrator whose calibration split is
    below the protocol's minimum."""
    details = _recal_details(model.extra, len(run.cell.calib), _undefined_record(model.seed),
                             "undefined")  # fmt: skip
    rows = [_undefined_row(ident(name, None), details, str(exc), t0)]
    for sh in run.cell.shifts:
        target_details = details.merged(shift_details(sh, run.y, None))
        rows.append(_undefined_row(ident(name, sh.target), target_details, str(exc), t0))
    return rows


def recalibrated_rows(run: CellRun, model: FittedProbe, ident: FrozenIdent) -> list[RunResult]:
    """The clean-test (and every shift target's) results of each recalibrator of the settings.

    ``ident(recalibrator, target)`` builds a result's identity (``target`` None: the clean test
    rows); the memo key includes the seed because the CV folds do.
    """
    cell, seed, predict, mkey = run.cell, model.seed, model.predict, model.mkey
    X, y = cell.features[1.0], run.y
    rows: list[RunResult] = []
    for name in run.settings.recalibrators:
        t0 = time.perf_counter()
        try:
            fit = fit_recalibrator(name, predict(X[cell.calib]), y[cell.calib], cell.task, seed)
        except CalibrationSplitTooSmall as exc:
            rows += _undefined_frozen(run, model, name, ident, exc, t0)
            continue
        details = _recal_details(model.extra, len(cell.calib), fit.record(), fit.choice)
        clean = Lazy(lambda fit=fit: fit.predict_proba(predict(X[cell.test])))
        ev = Evaluation(ident(name, None), run.y_test, clean, details, t0,
                        (mkey, "recal", name, seed, CLEAN), bins=True)  # fmt: skip
        rows.append(run.scorer(ev).result)
        for sh in cell.shifts:
            ev = Evaluation(
                ident(name, sh.target),
                targets(sh.y, cell.task),
                lambda fit=fit, sh=sh: fit.predict_proba(predict(sh.X)),
                lambda sh=sh, clean=clean, details=details: details.merged(
                    shift_details(sh, run.y_test, clean)
                ),
                time.perf_counter(),
                (mkey, "recal", name, seed, "shift", sh.target),
            )  # fmt: skip
            rows.append(run.scorer(ev).result)
    return rows


#: A LoRA recalibrated row's identity from (recalibrator, "clean" | "shift", target).
LoraIdent = Callable[..., RunIdentity]
#: Extra details of a LoRA shift row from the recalibrated clean probabilities (None: undefined).
AdaptedShiftDetails = Callable[[np.ndarray | None], RunDetails]


@dataclass(frozen=True)
class AdaptedShift:
    """A shift target's labels and the adapted model's probabilities on its rows."""

    target: str
    y: np.ndarray
    prob: np.ndarray
    details: AdaptedShiftDetails


@dataclass(frozen=True)
class AdaptedPredictions:
    """What the LoRA regime's recalibrated rows come from: one seed's adapted model's
    probabilities on the calibration split, the test rows and every shift target."""

    task: str
    seed: int
    calib_prob: np.ndarray
    calib_y: np.ndarray
    test_y: np.ndarray
    test_prob: np.ndarray
    shifts: tuple[AdaptedShift, ...]


def lora_recalibrated_rows(
    recalibrators: Sequence[str],
    preds: AdaptedPredictions,
    ident: LoraIdent,
    details: RunDetails,
) -> list[RunResult]:
    """The LoRA regime's recalibrated rows, under the same CV protocol as the frozen ones.

    ``ident(recalibrator, "clean" | "shift", target)`` gives a row's identity. A calibration
    split below the protocol's minimum gives NaN rows with the reason, as in the frozen cells.
    """
    scorer = RowScorer(preds.task)
    rows: list[RunResult] = []
    n_calib = len(preds.calib_y)
    for name in recalibrators:
        t0 = time.perf_counter()
        try:
            fit = fit_recalibrator(name, preds.calib_prob, preds.calib_y, preds.task, preds.seed)
        except CalibrationSplitTooSmall as exc:
            base = _recal_details(details, n_calib, _undefined_record(preds.seed), "undefined")
            rows.append(_undefined_row(ident(name, CLEAN), base, str(exc), t0))
            for sh in preds.shifts:
                extra = base.merged(sh.details(None))
                rows.append(_undefined_row(ident(name, "shift", sh.target), extra, str(exc), t0))
            continue
        base = _recal_details(details, n_calib, fit.record(), fit.choice)
        clean = fit.predict_proba(preds.test_prob)
        ev = Evaluation(ident(name, CLEAN), preds.test_y, lambda clean=clean: clean, base, t0)
        rows.append(scorer(ev).result)
        for sh in preds.shifts:
            prob = fit.predict_proba(sh.prob)
            extra = base.merged(sh.details(clean))
            ev = Evaluation(ident(name, "shift", sh.target), sh.y, lambda p=prob: p, extra, t0)
            rows.append(scorer(ev).result)
    return rows


def _undefined_row(ident: RunIdentity, details: RunDetails, reason: str, t0: float) -> RunResult:
    """A result whose every metric is NaN, each with ``reason`` in ``details["undefined"]``."""
    metrics = {m: float("nan") for m in METRIC_COLUMNS}
    undefined = dict.fromkeys(METRIC_COLUMNS, reason)
    wall = time.perf_counter() - t0
    return RunResult(ident, metrics, replace(details, undefined=undefined), wall)
