"""Rows of the full-label logistic probe after each post-hoc recalibrator.

Each recalibrator is fitted on the calibration split by
:func:`crsbench.calibration.fit_recalibrator` (regularisation chosen by cross-validation with
the row's seed, identity map kept unless it wins); its choice is recorded in the row's
details (``recal_choice`` and ``recal``). A calibration split below the protocol's minimum
gives rows whose metrics are NaN with the reason in ``details["undefined"]``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from crsbench.calibration import CalibrationSplitTooSmall, fit_recalibrator, load_recal_protocol
from crsbench.runs.cell_scoring import Lazy, emit, shift_reference, targets
from crsbench.store.columns import METRIC_COLUMNS


def recalibrated_rows(
    cell: Any,
    recalibrators: tuple[str, ...] | list[str],
    ident: Any,
    seed: int,
    predict: Any,
    y: np.ndarray,
    rows: list[dict[str, Any]],
    extra: Mapping[str, Any],
    memo: dict[Any, dict[str, Any]],
    mkey: str,
) -> None:
    """Append the clean-test (and every shift target's) rows of each recalibrator.

    ``ident(recalibrator, target)`` builds a row's identity (``target`` None: the clean test
    rows); the memo key includes the seed because the CV folds do.
    """
    X = cell.features[1.0]
    protocol = load_recal_protocol()
    for name in recalibrators:
        t0 = time.perf_counter()
        try:
            fit = fit_recalibrator(name, predict(X[cell.calib]), y[cell.calib], cell.task, seed)
        except CalibrationSplitTooSmall as exc:
            info = {**protocol.summary(), "seed": int(seed), "choice": "undefined"}
            details = {
                **extra,
                "n_calib": len(cell.calib),
                "recal": info,
                "recal_choice": "undefined",
            }
            rows.append(_undefined_row(ident(name, None), details, str(exc), t0))
            for sh in cell.shifts:
                shift_details = {**details, **sh.details, **shift_reference(sh, y, None)}
                rows.append(_undefined_row(ident(name, sh.target), shift_details, str(exc), t0))
            continue
        details = {
            **extra,
            "n_calib": len(cell.calib),
            "recal": fit.record(),
            "recal_choice": fit.choice,
        }
        clean = Lazy(lambda fit=fit: fit.predict_proba(predict(X[cell.test])))
        emit(
            rows,
            ident(name, None),
            y[cell.test],
            clean,
            cell.task,
            details,
            t0,
            memo,
            (mkey, "recal", name, seed, "clean"),
            bins=True,
        )
        for sh in cell.shifts:
            emit(
                rows,
                ident(name, sh.target),
                targets(sh.y, cell.task),
                lambda fit=fit, sh=sh: fit.predict_proba(predict(sh.X)),
                cell.task,
                lambda sh=sh, clean=clean, details=details: {
                    **details,
                    **sh.details,
                    **shift_reference(sh, y[cell.test], clean),
                },
                time.perf_counter(),
                memo,
                (mkey, "recal", name, seed, "shift", sh.target),
            )


def lora_recalibrated_rows(
    recalibrators: list[str],
    task: str,
    seed: int,
    calib: tuple[np.ndarray, np.ndarray],
    test: tuple[np.ndarray, np.ndarray],
    shifts: list[tuple[str, np.ndarray, np.ndarray, Any]],
    ident: Any,
    details: dict[str, Any],
) -> list[dict[str, Any]]:
    """The LoRA regime's recalibrated rows, under the same CV protocol as the frozen ones.

    ``calib`` is ``(probabilities, labels)`` and ``test`` ``(labels, probabilities)`` of the
    adapted model; ``shifts`` holds ``(target, labels, probabilities, details_fn)`` per shift
    target, ``details_fn(recalibrated clean probabilities)`` giving that row's extra details;
    ``ident(recalibrator, "clean" | "shift", target)`` gives a row's identity. A calibration
    split below the protocol's minimum gives NaN rows with the reason, as in the frozen cells.
    """
    from crsbench.runs.cell import score

    protocol = load_recal_protocol()
    rows: list[dict[str, Any]] = []
    for name in recalibrators:
        t0 = time.perf_counter()
        base = {**details, "n_calib": len(calib[1])}
        try:
            fit = fit_recalibrator(name, calib[0], calib[1], task, seed)
        except CalibrationSplitTooSmall as exc:
            info = {**protocol.summary(), "seed": int(seed), "choice": "undefined"}
            base.update(recal=info, recal_choice="undefined")
            rows.append(_undefined_row(ident(name, "clean"), base, str(exc), t0))
            for target, _, _, details_fn in shifts:
                extra = {**base, **details_fn(None)}
                rows.append(_undefined_row(ident(name, "shift", target), extra, str(exc), t0))
            continue
        base.update(recal=fit.record(), recal_choice=fit.choice)
        clean = fit.predict_proba(test[1])
        rows.append(_scored(ident(name, "clean"), test[0], clean, task, base, t0, score))
        for target, y, prob, details_fn in shifts:
            extra = {**base, **details_fn(clean)}
            rows.append(_scored(ident(name, "shift", target), y, fit.predict_proba(prob), task,
                                extra, t0, score))  # fmt: skip
    return rows


def _scored(ident: dict, y: np.ndarray, prob: np.ndarray, task: str, details: dict,
            t0: float, score: Any) -> dict[str, Any]:  # fmt: skip
    metrics = score(y, prob, task)
    metrics["details"].update(details)
    return {**ident, **metrics, "wall_time_s": time.perf_counter() - t0}


def _undefined_row(
    ident: dict[str, Any], details: dict[str, Any], reason: str, t0: float
) -> dict[str, Any]:
    """A row whose every metric is NaN, each with ``reason`` in ``details["undefined"]``."""
    return {
        **ident,
        **{m: float("nan") for m in METRIC_COLUMNS},
        "details": {**details, "undefined": dict.fromkeys(METRIC_COLUMNS, reason)},
        "wall_time_s": time.perf_counter() - t0,
    }
