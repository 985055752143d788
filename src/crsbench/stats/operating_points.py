"""Operating points and their transfer under shift (``docs/scoring.md``, "Subgroups, operating points, flips").

Per label (one-vs-rest per class for multi-class), the threshold is picked on the source
validation split from the full-label fit's stored validation predictions: the largest
threshold whose sensitivity reaches the target (or the smallest whose specificity reaches
it); a case is called positive when its score is ≥ the threshold. The same threshold is
applied on the source test set and on each shift target. With several seeds each seed picks
its own threshold and the rates are averaged over seeds.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping

import numpy as np
import pandas as pd

from crsbench.stats.cell_predictions import CellPredictions, EvalSplit

DEFAULT_TARGET_SENSITIVITY = 0.90
DEFAULT_TARGET_SPECIFICITY = 0.90
#: Largest sensitivity lost under shift with which an operating point is still "kept".
DEFAULT_TOLERANCE = 0.05


def output_names(names: tuple[str, ...], n_outputs: int) -> list[str]:
    """The ``n_outputs`` label names in column order: ``names`` (a cell's label names, as its
    store records them) when it has exactly that many, else ``output 0`` ... (a store that
    does not record them), so a table never shows a bare index."""
    if len(names) == n_outputs:
        return list(names)
    return [f"output {j}" for j in range(n_outputs)]


def threshold_for_sensitivity(y: np.ndarray, score: np.ndarray, target: float) -> float:
    """Largest ``t`` with sensitivity of ``score >= t`` at least ``target`` (NaN: no positives)."""
    pos = np.sort(np.asarray(score, float)[np.asarray(y) == 1])[::-1]
    if pos.size == 0:
        return float("nan")
    k = max(int(np.ceil(target * pos.size - 1e-12)), 1)
    return float(pos[k - 1])


def threshold_for_specificity(y: np.ndarray, score: np.ndarray, target: float) -> float:
    """Smallest ``t`` with specificity of ``score >= t`` at least ``target`` (NaN: no negatives)."""
    neg = np.sort(np.asarray(score, float)[np.asarray(y) == 0])
    if neg.size == 0:
        return float("nan")
    k = max(int(np.ceil(target * neg.size - 1e-12)), 1)
    return float(np.nextafter(neg[k - 1], np.inf))


def rates(y: np.ndarray, score: np.ndarray, threshold: float) -> tuple[float, float]:
    """(sensitivity, specificity) of calling ``score >= threshold`` positive."""
    y, called = np.asarray(y), np.asarray(score) >= threshold
    pos, neg = y == 1, y == 0
    sens = float(called[pos].mean()) if pos.any() else float("nan")
    spec = float((~called[neg]).mean()) if neg.any() else float("nan")
    return sens, spec


def label_columns(
    split: EvalSplit, prob: np.ndarray, task: str
) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """Per label: (index, 0/1 target, score) on the labelled rows (one-vs-rest for classes)."""
    for j in range(prob.shape[-1]):
        if task == "multiclass":
            yield j, (split.y == j).astype(float), prob[:, j]
            continue
        m = ~np.isnan(split.y[:, j])
        if m.any():
            yield j, split.y[m, j], prob[m, j]


def _seeds(prob: np.ndarray, n_seeds: int) -> list[np.ndarray]:
    return [prob] * n_seeds if prob.ndim == 2 else list(prob)


def validation_thresholds(cell: CellPredictions, kind: str, target: float) -> np.ndarray:
    """``(S, K)`` thresholds picked on the validation split per seed and label.

    ``kind`` is ``"sensitivity"`` or ``"specificity"``; a label without positives (or
    negatives) on validation has NaN.
    """
    if cell.val is None:
        raise ValueError(f"{cell.encoder}/{cell.dataset}: the store has no validation predictions")
    split, prob = cell.val
    pick = threshold_for_sensitivity if kind == "sensitivity" else threshold_for_specificity
    out = []
    for p in _seeds(prob, len(cell.seeds)):
        t = np.full(p.shape[-1], np.nan)
        for j, y, s in label_columns(split, p, cell.task):
            t[j] = pick(y, s, target)
        out.append(t)
    return np.asarray(out)


def _eval_sets(cell: CellPredictions) -> list[tuple[str, EvalSplit, np.ndarray]]:
    out = [("test", cell.test, cell.clean)]
    shifts = (*cell.shifts, *cell.extra_shifts)
    return out + [(split.dataset, split, prob) for split, prob in shifts]


def _cell_rows(cell: CellPredictions, kind: str, target: float) -> list[dict]:
    thr = validation_thresholds(cell, kind, target)
    names = output_names(cell.label_names, thr.shape[-1])
    rows = []
    for where, split, prob in _eval_sets(cell):
        per = {}
        for s, p in enumerate(_seeds(prob, len(cell.seeds))):
            for j, y, score in label_columns(split, p, cell.task):
                per.setdefault(j, []).append((*rates(y, score, thr[s, j]), thr[s, j]))
        for j, v in per.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # a label NaN at every seed
                sens, spec, t = np.nanmean(np.asarray(v, float), axis=0)
            rows.append({"encoder": cell.encoder, "dataset": cell.dataset, "label": names[j],
                         "label_index": j, "target_kind": kind, "target": target, "threshold": t,
                         "evaluated_on": where, "sensitivity": sens, "specificity": spec})  # fmt: skip
    return rows


def operating_point_transfer(
    cells: Mapping[tuple[str, str], CellPredictions],
    *,
    target_sensitivity: float = DEFAULT_TARGET_SENSITIVITY,
    target_specificity: float = DEFAULT_TARGET_SPECIFICITY,
) -> pd.DataFrame:
    """Sensitivity and specificity of the validation-picked thresholds on test and shift sets.

    Parameters
    ----------
    cells : mapping (encoder, dataset) → CellPredictions
        With their validation predictions (``val``) and shift targets.
    target_sensitivity, target_specificity : float
        The operating points picked on validation.

    Returns
    -------
    pandas.DataFrame
        One row per (encoder, dataset, label, target_kind, evaluated_on): ``label`` is the
        dataset's label (or class) name, ``label_index`` its column; the threshold (seed mean), sensitivity and specificity (seed means). ``evaluated_on`` is
        ``test`` or the shift target's dataset; a label without positives is left out.
    """
    rows: list[dict] = []
    for cell in cells.values():
        if cell.val is None:
            continue
        rows += _cell_rows(cell, "sensitivity", target_sensitivity)
        rows += _cell_rows(cell, "specificity", target_specificity)
    return pd.DataFrame(rows)


def sensitivity_lost(table: pd.DataFrame, tolerance: float = DEFAULT_TOLERANCE) -> pd.DataFrame:
    """The sensitivity lost under shift at the sensitivity operating point.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`operating_point_transfer`'s table.
    tolerance : float
        An encoder keeps its operating point on a (dataset, target) when no label loses more
        than this much sensitivity.

    Returns
    -------
    pandas.DataFrame
        One row per (encoder, dataset, shift target, label): ``sensitivity_test``,
        ``sensitivity_shift``, ``sensitivity_lost`` (test − shift), and ``keeps_operating_point``
        (every label of the encoder on that target within ``tolerance``).
    """
    sens = table[table["target_kind"] == "sensitivity"]
    test = sens[sens["evaluated_on"] == "test"].set_index(["encoder", "dataset", "label"])
    shift = sens[sens["evaluated_on"] != "test"]
    if shift.empty:
        return pd.DataFrame()
    out = shift[["encoder", "dataset", "evaluated_on", "label", "sensitivity"]].rename(
        columns={"evaluated_on": "shift_target", "sensitivity": "sensitivity_shift"})  # fmt: skip
    key = pd.MultiIndex.from_frame(out[["encoder", "dataset", "label"]])
    out["sensitivity_test"] = test["sensitivity"].reindex(key).to_numpy()
    out["sensitivity_lost"] = out["sensitivity_test"] - out["sensitivity_shift"]
    worst = out.groupby(["encoder", "dataset", "shift_target"])["sensitivity_lost"].transform("max")
    out["keeps_operating_point"] = worst <= tolerance
    out["tolerance"] = tolerance
    return out.reset_index(drop=True)
