"""Rows of the full-label logistic probe after each post-hoc recalibrator.

Each recalibrator is fitted on the calibration split by
:func:`crsbench.calibration.fit_recalibrator` (regularisation chosen by cross-validation with
the row's seed, identity map kept unless it wins); its choice is recorded in the row's
details (``recal_choice`` and ``recal``). A calibration split below the protocol's minimum
gives rows whose metrics are NaN with the reason in ``details["undefined"]``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from crsbench.calibration import CalibrationSplitTooSmall, fit_recalibrator, load_recal_protocol
from crsbench.evaluation.cell_data import CellRun, FittedProbe
from crsbench.evaluation.cell_scoring import (
    Evaluation,
    Lazy,
    RowScorer,
    RunRow,
    shift_reference,
    targets,
)
from crsbench.evaluation.identity import RunIdentity
from crsbench.protocol import CLEAN
from crsbench.store.columns import METRIC_COLUMNS

#: A recalibrated row's identity from (recalibrator, shift target or None for the test rows).
FrozenIdent = Callable[[str, str | None], RunIdentity]


def _undefined_frozen(
    run: CellRun, model: FittedProbe, name: str, ident: FrozenIdent, exc: Exception, t0: float
) -> list[RunRow]:
    """NaN rows (test and every shift target) of a recalibrator whose calibration split is
    below the protocol's minimum."""
    info = {**load_recal_protocol().summary(), "seed": int(model.seed), "choice": "undefined"}
    base = {**model.extra, "n_calib": len(run.cell.calib)}
    details = {**base, "recal": info, "recal_choice": "undefined"}
    rows = [_undefined_row(ident(name, None), details, str(exc), t0)]
    for sh in run.cell.shifts:
        shift_details = {**details, **sh.details, **shift_reference(sh, run.y, None)}
        rows.append(_undefined_row(ident(name, sh.target), shift_details, str(exc), t0))
    return rows


def recalibrated_rows(run: CellRun, model: FittedProbe, ident: FrozenIdent) -> list[RunRow]:
    """The clean-test (and every shift target's) rows of each recalibrator of the settings.

    ``ident(recalibrator, target)`` builds a row's identity (``target`` None: the clean test
    rows); the memo key includes the seed because the CV folds do.
    """
    cell, seed, predict, mkey = run.cell, model.seed, model.predict, model.mkey
    X, y = cell.features[1.0], run.y
    rows: list[RunRow] = []
    for name in run.settings.recalibrators:
        t0 = time.perf_counter()
        try:
            fit = fit_recalibrator(name, predict(X[cell.calib]), y[cell.calib], cell.task, seed)
        except CalibrationSplitTooSmall as exc:
            rows += _undefined_frozen(run, model, name, ident, exc, t0)
            continue
        details = {**model.extra, "n_calib": len(cell.calib), "recal": fit.record(),
                   "recal_choice": fit.choice}  # fmt: skip
        clean = Lazy(lambda fit=fit: fit.predict_proba(predict(X[cell.test])))
        ev = Evaluation(ident(name, None), run.y_test, clean, details, t0,
                        (mkey, "recal", name, seed, CLEAN), bins=True)  # fmt: skip
        rows.append(run.scorer(ev).row)
        for sh in cell.shifts:
            ev = Evaluation(
                ident(name, sh.target),
                targets(sh.y, cell.task),
                lambda fit=fit, sh=sh: fit.predict_proba(predict(sh.X)),
                lambda sh=sh, clean=clean, details=details: {
                    **details, **sh.details, **shift_reference(sh, run.y_test, clean)
                },
                time.perf_counter(),
                (mkey, "recal", name, seed, "shift", sh.target),
            )  # fmt: skip
            rows.append(run.scorer(ev).row)
    return rows


#: A LoRA recalibrated row's identity from (recalibrator, "clean" | "shift", target).
LoraIdent = Callable[..., RunIdentity]
#: Extra details of a LoRA shift row from the recalibrated clean probabilities (None: undefined).
ShiftDetails = Callable[[np.ndarray | None], dict[str, Any]]


@dataclass(frozen=True)
class AdaptedShift:
    """A shift target's labels and the adapted model's probabilities on its rows."""

    target: str
    y: np.ndarray
    prob: np.ndarray
    details: ShiftDetails


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
    details: Mapping[str, Any],
) -> list[RunRow]:
    """The LoRA regime's recalibrated rows, under the same CV protocol as the frozen ones.

    ``ident(recalibrator, "clean" | "shift", target)`` gives a row's identity. A calibration
    split below the protocol's minimum gives NaN rows with the reason, as in the frozen cells.
    """
    scorer = RowScorer(preds.task)
    rows: list[RunRow] = []
    for name in recalibrators:
        t0 = time.perf_counter()
        base = {**details, "n_calib": len(preds.calib_y)}
        try:
            fit = fit_recalibrator(name, preds.calib_prob, preds.calib_y, preds.task, preds.seed)
        except CalibrationSplitTooSmall as exc:
            info = {**load_recal_protocol().summary(), "seed": int(preds.seed),
                    "choice": "undefined"}  # fmt: skip
            base.update(recal=info, recal_choice="undefined")
            rows.append(_undefined_row(ident(name, CLEAN), base, str(exc), t0))
            for sh in preds.shifts:
                extra = {**base, **sh.details(None)}
                rows.append(_undefined_row(ident(name, "shift", sh.target), extra, str(exc), t0))
            continue
        base.update(recal=fit.record(), recal_choice=fit.choice)
        clean = fit.predict_proba(preds.test_prob)
        ev = Evaluation(ident(name, CLEAN), preds.test_y, lambda clean=clean: clean, base, t0)
        rows.append(scorer(ev).row)
        for sh in preds.shifts:
            prob = fit.predict_proba(sh.prob)
            extra = {**base, **sh.details(clean)}
            ev = Evaluation(ident(name, "shift", sh.target), sh.y, lambda p=prob: p, extra, t0)
            rows.append(scorer(ev).row)
    return rows


def _undefined_row(ident: RunIdentity, details: dict[str, Any], reason: str, t0: float) -> RunRow:
    """A row whose every metric is NaN, each with ``reason`` in ``details["undefined"]``."""
    return {
        **ident.as_dict(),
        **{m: float("nan") for m in METRIC_COLUMNS},
        "details": {**details, "undefined": dict.fromkeys(METRIC_COLUMNS, reason)},
        "wall_time_s": time.perf_counter() - t0,
    }
