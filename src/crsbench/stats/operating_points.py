"""Operating points and their transfer under shift (``docs/scoring.md``, "Subgroups, operating points, flips").

Per label (one-vs-rest per class for multi-class), the threshold is picked on the source
validation split from the full-label fit's stored validation predictions: the largest
threshold whose sensitivity reaches the target (or the smallest whose specificity reaches
it); a case is called positive when its score is ≥ the threshold. The same threshold is
applied on the source test set and on each shift target. With several seeds each seed picks
its own threshold and the rates are averaged over seeds. The targets, the tolerance and the
fewest positives a label needs come from the versioned settings
(:mod:`crsbench.stats.operating_point_settings`); the interval of the sensitivity lost from
:mod:`crsbench.stats.operating_point_loss`.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping
from functools import partial

import numpy as np
import pandas as pd

from crsbench.core.errors import DataError
from crsbench.stats.cell_predictions import CellPredictions, EvalSplit, once_each, seed_slices
from crsbench.stats.operating_point_settings import load_operating_point_settings

_SETTINGS = load_operating_point_settings()
DEFAULT_TARGET_SENSITIVITY = _SETTINGS.target_sensitivity
DEFAULT_TARGET_SPECIFICITY = _SETTINGS.target_specificity
#: Largest sensitivity lost under shift with which an operating point is still "kept".
DEFAULT_TOLERANCE = _SETTINGS.tolerance
#: Fewest positives of a label on validation, test and the shift target.
DEFAULT_MIN_POSITIVES = _SETTINGS.min_positives


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


def validation_thresholds(cell: CellPredictions, kind: str, target: float) -> np.ndarray:
    """``(S, K)`` thresholds picked on the validation split per seed and label.

    ``kind`` is ``"sensitivity"`` or ``"specificity"``; a label without positives (or
    negatives) on validation has NaN.
    """
    if cell.val is None:
        raise DataError(f"{cell.encoder}/{cell.dataset}: the store has no validation predictions")
    split, prob = cell.val
    pick = threshold_for_sensitivity if kind == "sensitivity" else threshold_for_specificity

    def picked(p: np.ndarray) -> np.ndarray:
        t = np.full(p.shape[-1], np.nan)
        for j, y, s in label_columns(split, p, cell.task):
            t[j] = pick(y, s, target)
        return t

    return np.asarray(once_each(picked, [(p,) for p in seed_slices(prob, len(cell.seeds))]))


def eval_sets(cell: CellPredictions) -> list[tuple[str, EvalSplit, np.ndarray]]:
    """(``test`` or the target's name, rows, probabilities): the test set, then each shift
    target (inside R and outside it)."""
    out = [("test", cell.test, cell.clean)]
    shifts = (*cell.shifts, *cell.extra_shifts)
    return out + [(split.dataset, split, prob) for split, prob in shifts]


def positives(split: EvalSplit, n_labels: int, task: str) -> np.ndarray:
    """``(K,)`` positives of each label (one-vs-rest per class) on ``split``'s labelled rows."""
    if task == "multiclass":
        return np.bincount(np.asarray(split.y, int), minlength=n_labels)[:n_labels]
    return np.nansum(np.asarray(split.y, float) == 1, axis=0).astype(int)


def _seed_rates(
    split: EvalSplit, task: str, prob: np.ndarray, thr: np.ndarray
) -> list[tuple[int, float, float, float]]:
    """(label, sensitivity, specificity, threshold) of one seed's probabilities on ``split``."""
    return [(j, *rates(y, score, thr[j]), thr[j]) for j, y, score in
            label_columns(split, prob, task)]  # fmt: skip


def _cell_rows(cell: CellPredictions, kind: str, target: float) -> list[dict]:
    thr = validation_thresholds(cell, kind, target)
    names = output_names(cell.label_names, thr.shape[-1])
    n_val = (np.zeros(thr.shape[-1], int) if cell.val is None  # refused above, for mypy
             else positives(cell.val[0], thr.shape[-1], cell.task))  # fmt: skip
    rows = []
    for where, split, prob in eval_sets(cell):
        per: dict[int, list[tuple[float, float, float]]] = {}
        n_pos = positives(split, thr.shape[-1], cell.task)
        slices = seed_slices(prob, len(cell.seeds))
        seed_rates = partial(_seed_rates, split, cell.task)
        for found in once_each(seed_rates, [(p, thr[s]) for s, p in enumerate(slices)]):
            for j, sens, spec, t in found:
                per.setdefault(j, []).append((sens, spec, t))
        for j, v in per.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # a label NaN at every seed
                sens, spec, t = np.nanmean(np.asarray(v, float), axis=0)
            rows.append({"encoder": cell.encoder, "dataset": cell.dataset, "label": names[j],
                         "label_index": j, "target_kind": kind, "target": target, "threshold": t,
                         "evaluated_on": where, "sensitivity": sens, "specificity": spec,
                         "n_positives": int(n_pos[j]), "n_positives_val": int(n_val[j]),
                         "settings_version": _SETTINGS.version})  # fmt: skip
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
        dataset's label (or class) name, ``label_index`` its column; the threshold (seed
        mean), sensitivity and specificity (seed means), ``n_positives`` (on the set
        evaluated), ``n_positives_val`` (on validation) and ``settings_version``.
        ``evaluated_on`` is ``test`` or the shift target's dataset; a label without labelled
        rows is left out.
    """
    rows: list[dict] = []
    for cell in cells.values():
        if cell.val is None:
            continue
        cell = cell.widened()
        rows += _cell_rows(cell, "sensitivity", target_sensitivity)
        rows += _cell_rows(cell, "specificity", target_specificity)
    return pd.DataFrame(rows)


def sensitivity_lost(
    table: pd.DataFrame,
    tolerance: float = DEFAULT_TOLERANCE,
    min_positives: int = DEFAULT_MIN_POSITIVES,
    intervals: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The sensitivity lost under shift at the sensitivity operating point.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`operating_point_transfer`'s table.
    tolerance : float
        An encoder keeps its operating point on a (dataset, target) when no label that has
        ``min_positives`` loses more than this much sensitivity.
    min_positives : int
        Fewest positives of a label on validation, on test and on the target; below it the
        label's ``status`` is ``too few positives (n)`` (``n`` the smallest of the three), its
        loss is NaN and it does not decide ``keeps_operating_point``.
    intervals : pandas.DataFrame, optional
        :func:`crsbench.stats.operating_point_loss.sensitivity_loss_intervals`: its
        ``lost_ci_low`` / ``lost_ci_high`` (95 % CI, basic bootstrap over test and target
        patients at the validation-picked thresholds) are joined on (encoder, dataset,
        shift_target, label).

    Returns
    -------
    pandas.DataFrame
        One row per (encoder, dataset, shift target, label): ``sensitivity_test``,
        ``sensitivity_shift``, ``sensitivity_lost`` (test − shift), ``lost_ci_low``,
        ``lost_ci_high``, ``n_positives`` (the smallest of validation, test and target),
        ``status``, ``keeps_operating_point`` (every label with enough positives within
        ``tolerance``; NaN when no label has enough), ``tolerance``, ``min_positives``.
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
    n_pos = np.minimum.reduce([shift["n_positives"].to_numpy(), shift["n_positives_val"].to_numpy(),
                               test["n_positives"].reindex(key).fillna(0).to_numpy()])  # fmt: skip
    out["n_positives"] = n_pos.astype(int)
    enough = out["n_positives"] >= min_positives
    out["status"] = np.where(enough, "ok", [f"too few positives ({n})" for n in out["n_positives"]])
    out["sensitivity_lost"] = (out["sensitivity_test"] - out["sensitivity_shift"]).where(enough)
    out["lost_ci_low"] = out["lost_ci_high"] = np.nan
    if intervals is not None and not intervals.empty:
        ci = intervals.set_index(["encoder", "dataset", "shift_target", "label"])
        at = pd.MultiIndex.from_frame(out[["encoder", "dataset", "shift_target", "label"]])
        for col in ("lost_ci_low", "lost_ci_high"):
            out[col] = ci[col].reindex(at).to_numpy()
        out.loc[~enough, ["lost_ci_low", "lost_ci_high"]] = np.nan
    group = out.groupby(["encoder", "dataset", "shift_target"])["sensitivity_lost"]
    worst, decided = group.transform("max"), group.transform("count") > 0
    out["keeps_operating_point"] = pd.array(np.where(decided, worst <= tolerance, False),
                                            dtype="boolean")  # fmt: skip
    out.loc[~decided, "keeps_operating_point"] = pd.NA
    out["tolerance"], out["min_positives"] = tolerance, min_positives
    return out.reset_index(drop=True)
