"""Prediction flips under perturbation (``docs/scoring.md``, "Prediction flips").

A *decision* is what a reader of the model's output acts on: for a multi-class task the
predicted class of an image (argmax); for a multi-label (and binary) task each label's yes/no
at the validation-picked sensitivity operating point
(:func:`crsbench.stats.operating_points.validation_thresholds`). ``flip_share`` is the share
of decisions that change between the clean and the perturbed image: images for multi-class,
(image, label) pairs for multi-label, i.e. the mean over labels of each label's flip share.
The same definition for every task, so a 14-label CheXpert cell and an 8-class ISIC cell are
compared on one scale; the old multi-label figure (an image flips when *any* of its labels
does) grows with the number of labels and stays beside it as ``any_label_flip_share``.
Multi-label cells also get one row per label that has a threshold. Each is reported beside the AUROC drop of the
same condition (macro for the cell, the label's own for a label row); with several seeds
every figure is the mean over seeds.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import numpy as np
import pandas as pd

from crsbench.stats.cell_predictions import CellPredictions, once_each, seed_slices
from crsbench.stats.operating_points import (
    DEFAULT_TARGET_SENSITIVITY,
    output_names,
    validation_thresholds,
)
from crsbench.stats.weighted_metrics import weighted_macro_auroc

#: ``label`` of the row that holds the cell's decision-level flip share.
ALL_DECISIONS = "all"


def _decisions(prob: np.ndarray, task: str, thr: np.ndarray | None) -> np.ndarray:
    if task == "multiclass":
        return prob.argmax(axis=1)[:, None]
    with np.errstate(invalid="ignore"):
        return prob >= thr[None, :]


def label_flip_shares(clean: np.ndarray, perturbed: np.ndarray, thr: np.ndarray) -> np.ndarray:
    """``(K,)`` share of rows whose yes/no at each label's threshold differs (NaN where the
    threshold is NaN)."""
    changed = _decisions(clean, "multilabel", thr) != _decisions(perturbed, "multilabel", thr)
    return np.where(np.isfinite(thr), changed.mean(axis=0), np.nan)


def flip_share(clean: np.ndarray, perturbed: np.ndarray, task: str, thr=None) -> float:
    """Share of decisions that differ: images whose class differs (multi-class), or
    (image, label) pairs whose thresholded decision differs (multi-label: the mean of
    :func:`label_flip_shares` over the labels with a threshold; NaN when none has one)."""
    if task == "multiclass":
        return float((_decisions(clean, task, None) != _decisions(perturbed, task, None)).mean())
    shares = label_flip_shares(clean, perturbed, thr)
    return float(np.nanmean(shares)) if np.isfinite(shares).any() else float("nan")


def _flip_share(task: str, clean: np.ndarray, perturbed: np.ndarray, thr) -> float:
    return flip_share(clean, perturbed, task, thr)


def any_label_flip_share(clean: np.ndarray, perturbed: np.ndarray, thr: np.ndarray) -> float:
    """Share of images with at least one thresholded label changed (labels with a NaN
    threshold ignored): grows with the number of labels, not comparable across tasks."""
    ok = np.isfinite(thr)
    if not ok.any():
        return float("nan")
    a, b = (
        _decisions(clean, "multilabel", thr)[:, ok],
        _decisions(perturbed, "multilabel", thr)[:, ok],
    )
    return float(np.any(a != b, axis=1).mean())


def _aurocs(cell: CellPredictions, probs: list[np.ndarray]) -> tuple[float, np.ndarray]:
    """Seed-mean macro AUROC and, for multi-label, each label's ``(K,)``."""
    ones = np.ones((1, len(cell.test.groups)))
    y = cell.test.y

    def macro_of(p: np.ndarray) -> float:
        return weighted_macro_auroc(y, p, cell.task, ones)[0]

    def per_label(p: np.ndarray) -> list[float]:
        return [weighted_macro_auroc(y[:, [j]], p[:, [j]], cell.task, ones)[0]
                for j in range(p.shape[1])]  # fmt: skip

    macro = float(np.mean(once_each(macro_of, [(p,) for p in probs])))
    if cell.task == "multiclass":
        return macro, np.empty(0)
    return macro, np.mean(once_each(per_label, [(p,) for p in probs]), axis=0)


def _cell_flips(cell: CellPredictions, target: float) -> list[dict]:
    cell = cell.widened()
    n = len(cell.seeds)
    thr = None
    if cell.task != "multiclass":
        if cell.val is None:
            return []
        thr = validation_thresholds(cell, "sensitivity", target)
    clean = seed_slices(cell.clean, n)
    auc0, auc0_label = _aurocs(cell, clean)
    decision = ("argmax (one decision per image)" if thr is None else
                f"each label >= its threshold at sensitivity {target:g} (validation)")  # fmt: skip
    rows = []
    for (cond, sev), prob in cell.conditions.items():
        pert = seed_slices(prob, n)
        pairs = [(c, p, None if thr is None else thr[s])
                 for s, (c, p) in enumerate(zip(clean, pert, strict=True))]  # fmt: skip
        auc, auc_label = _aurocs(cell, pert)
        base = {"encoder": cell.encoder, "dataset": cell.dataset, "condition": cond,
                "severity": int(sev)}  # fmt: skip
        row = {**base, "label": ALL_DECISIONS,
               "flip_share": float(np.mean(once_each(partial(_flip_share, cell.task),
                                                      pairs))),
               "any_label_flip_share": np.nan, "auroc_clean": auc0, "auroc_perturbed": auc,
               "auroc_drop": auc0 - auc, "decision": decision}  # fmt: skip
        rows.append(row)
        if thr is None:
            continue
        row["any_label_flip_share"] = float(np.mean(once_each(any_label_flip_share, pairs)))
        per_label = np.mean(once_each(label_flip_shares, pairs), axis=0)
        for j, name in enumerate(output_names(cell.label_names, len(per_label))):
            if not np.isfinite(per_label[j]):  # no threshold (no validation positives)
                continue
            rows.append({**base, "label": name, "flip_share": float(per_label[j]),
                         "any_label_flip_share": np.nan, "auroc_clean": float(auc0_label[j]),
                         "auroc_perturbed": float(auc_label[j]),
                         "auroc_drop": float(auc0_label[j] - auc_label[j]),
                         "decision": decision})  # fmt: skip
    return rows


def prediction_flips(
    cells: Mapping[tuple[str, str], CellPredictions],
    *,
    target_sensitivity: float = DEFAULT_TARGET_SENSITIVITY,
) -> pd.DataFrame:
    """Flip share and AUROC drop per (encoder, dataset, condition, severity, label).

    Parameters
    ----------
    cells : mapping (encoder, dataset) → CellPredictions
        The clean and perturbed test predictions (and, for multi-label, validation ones).
    target_sensitivity : float
        The multi-label operating point picked on validation.

    Returns
    -------
    pandas.DataFrame
        ``label`` is :data:`ALL_DECISIONS` for the cell's row (``flip_share``: share of
        decisions changed, comparable across tasks; ``any_label_flip_share`` for multi-label;
        the macro AUROC) and a label name for each multi-label label's row (its flip share
        and its own AUROC); ``auroc_clean``, ``auroc_perturbed``, ``auroc_drop`` and the
        ``decision`` rule. A multi-label cell without validation predictions is left out.
    """
    rows: list[dict] = []
    for cell in cells.values():
        rows += _cell_flips(cell, target_sensitivity)
    return pd.DataFrame(rows)
