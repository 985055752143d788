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
from crsbench.runs.cell_scoring import emit, targets

_METRICS = ("auroc", "ece", "brier", "nll", "sens_at_spec90", "sens_at_spec95")


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
    """Append the clean-test (and shift-target) rows of each recalibrator.

    ``ident(recalibrator, shift)`` builds a row's identity; the memo key includes the seed
    because the CV folds do.
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
            rows.append(_undefined_row(ident(name, False), details, str(exc), t0))
            if cell.shift is not None:
                shift_details = {**details, **cell.shift.details}
                rows.append(_undefined_row(ident(name, True), shift_details, str(exc), t0))
            continue
        details = {
            **extra,
            "n_calib": len(cell.calib),
            "recal": fit.record(),
            "recal_choice": fit.choice,
        }
        emit(
            rows,
            ident(name, False),
            y[cell.test],
            lambda fit=fit: fit.predict_proba(predict(X[cell.test])),
            cell.task,
            details,
            t0,
            memo,
            (mkey, "recal", name, seed, "clean"),
            bins=True,
        )
        if cell.shift is not None:
            emit(
                rows,
                ident(name, True),
                targets(cell.shift.y, cell.task),
                lambda fit=fit: fit.predict_proba(predict(cell.shift.X)),
                cell.task,
                {**details, **cell.shift.details},
                time.perf_counter(),
                memo,
                (mkey, "recal", name, seed, "shift"),
            )


def lora_recalibrated_rows(
    recalibrators: list[str],
    task: str,
    seed: int,
    calib: tuple[np.ndarray, np.ndarray],
    test: tuple[np.ndarray, np.ndarray],
    shift: tuple[np.ndarray, np.ndarray, dict[str, Any]] | None,
    ident: Any,
    details: dict[str, Any],
) -> list[dict[str, Any]]:
    """The LoRA regime's recalibrated rows, under the same CV protocol as the frozen ones.

    ``calib`` and ``test`` are ``(probabilities, labels)`` / ``(labels, probabilities)`` of
    the adapted model; ``shift`` is ``(labels, probabilities, shift details)`` or ``None``;
    ``ident(recalibrator, "clean" | "shift")`` gives a row's identity. A calibration split
    below the protocol's minimum gives NaN rows with the reason, as in the frozen cells.
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
            if shift is not None:
                rows.append(
                    _undefined_row(ident(name, "shift"), {**base, **shift[2]}, str(exc), t0)
                )
            continue
        base.update(recal=fit.record(), recal_choice=fit.choice)
        for where, y, prob, extra in (("clean", test[0], test[1], {}),
                                      *([("shift", shift[0], shift[1], shift[2])] if shift else [])):  # fmt: skip
            metrics = score(y, fit.predict_proba(prob), task)
            metrics["details"].update({**base, **extra})
            rows.append({**ident(name, where), **metrics, "wall_time_s": time.perf_counter() - t0})
    return rows


def _undefined_row(
    ident: dict[str, Any], details: dict[str, Any], reason: str, t0: float
) -> dict[str, Any]:
    """A row whose every metric is NaN, each with ``reason`` in ``details["undefined"]``."""
    return {
        **ident,
        **{m: float("nan") for m in _METRICS},
        "details": {**details, "undefined": dict.fromkeys(_METRICS, reason)},
        "wall_time_s": time.perf_counter() - t0,
    }
