"""Prediction flips under perturbation (``docs/scoring.md``, "Subgroups, operating points, flips").

The share of test images whose decision changes between the clean and the perturbed image:
the predicted class (argmax) for multi-class tasks; for multi-label tasks, any label's
decision at the validation-picked sensitivity operating point
(:func:`crsbench.stats.operating_points.validation_thresholds`). Reported beside the AUROC
drop of the same condition; with several seeds each is the mean over seeds.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from crsbench.stats.cell_predictions import CellPredictions
from crsbench.stats.operating_points import DEFAULT_TARGET_SENSITIVITY, validation_thresholds
from crsbench.stats.weighted_metrics import weighted_macro_auroc


def _decisions(prob: np.ndarray, task: str, thr: np.ndarray | None) -> np.ndarray:
    if task == "multiclass":
        return prob.argmax(axis=1)[:, None]
    with np.errstate(invalid="ignore"):
        return prob >= thr[None, :]


def flip_share(clean: np.ndarray, perturbed: np.ndarray, task: str, thr=None) -> float:
    """Share of rows whose class (multi-class) or any thresholded label (multi-label) differs.

    Labels with a NaN threshold are ignored.
    """
    a, b = _decisions(clean, task, thr), _decisions(perturbed, task, thr)
    if task != "multiclass":
        ok = np.isfinite(thr)
        a, b = a[:, ok], b[:, ok]
        if a.shape[1] == 0:
            return float("nan")
    return float(np.any(a != b, axis=1).mean())


def _per_seed(prob: np.ndarray, n: int) -> list[np.ndarray]:
    return [prob] * n if prob.ndim == 2 else list(prob)


def _cell_flips(cell: CellPredictions, target: float) -> list[dict]:
    n = len(cell.seeds)
    thr = None
    if cell.task != "multiclass":
        if cell.val is None:
            return []
        thr = validation_thresholds(cell, "sensitivity", target)
    ones = np.ones((1, len(cell.test.groups)))
    clean = _per_seed(cell.clean, n)
    auc0 = [weighted_macro_auroc(cell.test.y, c, cell.task, ones)[0] for c in clean]
    rows = []
    for (cond, sev), prob in cell.conditions.items():
        pert = _per_seed(prob, n)
        flips = [flip_share(c, p, cell.task, None if thr is None else thr[s])
                 for s, (c, p) in enumerate(zip(clean, pert, strict=True))]  # fmt: skip
        auc = [weighted_macro_auroc(cell.test.y, p, cell.task, ones)[0] for p in pert]
        rows.append({"encoder": cell.encoder, "dataset": cell.dataset, "condition": cond,
                     "severity": int(sev), "flip_share": float(np.mean(flips)),
                     "auroc_clean": float(np.mean(auc0)), "auroc_perturbed": float(np.mean(auc)),
                     "auroc_drop": float(np.mean(auc0) - np.mean(auc)),
                     "decision": "argmax" if thr is None else
                     f"label >= threshold at sensitivity {target:g} (validation)"})  # fmt: skip
    return rows


def prediction_flips(
    cells: Mapping[tuple[str, str], CellPredictions],
    *,
    target_sensitivity: float = DEFAULT_TARGET_SENSITIVITY,
) -> pd.DataFrame:
    """Flip share and AUROC drop per (encoder, dataset, condition, severity).

    Parameters
    ----------
    cells : mapping (encoder, dataset) → CellPredictions
        The clean and perturbed test predictions (and, for multi-label, validation ones).
    target_sensitivity : float
        The multi-label operating point picked on validation.

    Returns
    -------
    pandas.DataFrame
        ``flip_share`` in [0, 1], ``auroc_clean``, ``auroc_perturbed``, ``auroc_drop`` and the
        ``decision`` rule. A multi-label cell without validation predictions is left out.
    """
    rows: list[dict] = []
    for cell in cells.values():
        rows += _cell_flips(cell, target_sensitivity)
    return pd.DataFrame(rows)
