"""Subgroups: AUROC, ECE and the robustness drop per subgroup the stored metadata carries
(sex, age band, view, anatomical site), the worst subgroup and the gap per encoder, with the
test-patient bootstrap's intervals (``docs/scoring.md``, "Subgroups, operating points, flips").

Every replicate resamples the test patients with :func:`crsbench.stats.resample.row_weights`
(the same patients for every encoder: paired), and a subgroup's value in a replicate is the
metric on its rows with those weights. Intervals are percentile intervals of the replicates.
A subgroup with fewer than ``min_patients`` distinct patients is ``too small``: its values are
NaN and it never enters the worst subgroup or the gap.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from crsbench.stats.patient_bootstrap import CellPredictions, EvalSplit
from crsbench.stats.resample import replicate_ids, row_weights
from crsbench.stats.weighted_metrics import weighted_ece, weighted_macro_auroc

#: Age bands in years: (lower bound inclusive, upper bound exclusive, name).
AGE_BANDS: tuple[tuple[float, float, str], ...] = (
    (0.0, 40.0, "<40"),
    (40.0, 60.0, "40-59"),
    (60.0, 80.0, "60-79"),
    (80.0, float("inf"), "80+"),
)
#: Fewest distinct patients a subgroup needs to be reported as a number.
MIN_SUBGROUP_PATIENTS = 30
#: Bootstrap replicates of the subgroup intervals (the CLI passes ``--replicates``).
DEFAULT_SUBGROUP_REPLICATES = 200
TOO_SMALL = "too small"

Metric = Callable[[np.ndarray, np.ndarray, str, np.ndarray], np.ndarray]


def age_band(ages: np.ndarray) -> np.ndarray:
    """The :data:`AGE_BANDS` name of each age (str years; blank or unparseable → blank)."""
    years = pd.to_numeric(pd.Series(np.asarray(ages, dtype=str)), errors="coerce").to_numpy()
    out = np.full(len(years), "", dtype=object)
    for lo, hi, name in AGE_BANDS:
        out[(years >= lo) & (years < hi)] = name
    return out.astype(str)


def subgroup_labels(split: EvalSplit) -> dict[str, np.ndarray]:
    """Attribute → subgroup of each row of ``split`` (ages banded; blank = not recorded)."""
    out = {}
    for attr, vals in split.metadata.items():
        out["age_band" if attr == "age" else attr] = (
            age_band(vals) if attr == "age" else np.asarray(vals, dtype=str)
        )
    return out


def _seed_mean(metric: Metric, y, prob, task, w) -> np.ndarray:
    """The metric for each row of ``w``, averaged over seeds when ``prob`` is ``(S, n, K)``."""
    if prob.ndim == 2:
        return metric(y, prob, task, w)
    return np.mean([metric(y, p, task, w) for p in prob], axis=0)


def _values(cell: CellPredictions, rows: np.ndarray, w: np.ndarray) -> dict[str, np.ndarray]:
    """``(1 + B,)`` AUROC, ECE and mean robustness drop on ``rows`` (point first)."""
    y, task = cell.test.y[rows], cell.task
    ww = np.vstack([np.ones(len(rows)), w[:, rows]])
    auc = _seed_mean(weighted_macro_auroc, y, cell.clean[..., rows, :], task, ww)
    ece = _seed_mean(weighted_ece, y, cell.clean[..., rows, :], task, ww)
    drops = [auc - _seed_mean(weighted_macro_auroc, y, p[..., rows, :], task, ww)
             for p in cell.conditions.values()]  # fmt: skip
    drop = np.mean(drops, axis=0) if drops else np.full(len(ww), np.nan)
    return {"auroc": auc, "ece": ece, "robustness_drop": drop}


def _interval(rep: np.ndarray, level: float) -> tuple[float, float]:
    rep = rep[np.isfinite(rep)]
    if rep.size == 0:
        return float("nan"), float("nan")
    a = (1 - level) / 2
    return float(np.quantile(rep, a)), float(np.quantile(rep, 1 - a))


def _cell_subgroups(cell, w, min_patients, level) -> tuple[list[dict], dict]:
    rows, reps = [], {}
    for attr, lab in subgroup_labels(cell.test).items():
        for value in sorted(set(lab) - {""}):
            idx = np.flatnonzero(lab == value)
            n_pat = len(np.unique(cell.test.groups[idx]))
            row = {"encoder": cell.encoder, "dataset": cell.dataset, "attribute": attr,
                   "subgroup": value, "n_images": len(idx), "n_patients": n_pat}  # fmt: skip
            if n_pat < min_patients:
                rows.append({**row, "status": TOO_SMALL})
                continue
            vals = _values(cell, idx, w)
            reps[(attr, value)] = vals
            row["status"] = "ok"
            for name, v in vals.items():
                lo, hi = _interval(v[1:], level)
                row.update({name: float(v[0]), f"{name}_lo": lo, f"{name}_hi": hi})
            rows.append(row)
    return rows, reps


def _worst(cell, reps, level) -> list[dict]:
    """Worst subgroup and gap per attribute: lowest AUROC, highest ECE and drop."""
    out = []
    for attr in sorted({a for a, _ in reps}):
        names = [v for a, v in reps if a == attr]
        for metric, worst_is_max in (("auroc", False), ("ece", True), ("robustness_drop", True)):
            m = np.stack([reps[(attr, v)][metric] for v in names])  # (G, 1 + B)
            with np.errstate(invalid="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN replicate columns
                worst = np.nanmax(m, 0) if worst_is_max else np.nanmin(m, 0)
                gap = np.nanmax(m, 0) - np.nanmin(m, 0)
            at = int(np.nanargmax(m[:, 0]) if worst_is_max else np.nanargmin(m[:, 0])) \
                if np.isfinite(m[:, 0]).any() else 0  # fmt: skip
            wlo, whi = _interval(worst[1:], level)
            glo, ghi = _interval(gap[1:], level)
            out.append({"encoder": cell.encoder, "dataset": cell.dataset, "attribute": attr,
                        "metric": metric, "n_subgroups": len(names),
                        "worst_subgroup": names[at], "worst": float(worst[0]),
                        "worst_lo": wlo, "worst_hi": whi, "gap": float(gap[0]),
                        "gap_lo": glo, "gap_hi": ghi})  # fmt: skip
    return out


def subgroup_analysis(
    cells: Mapping[tuple[str, str], CellPredictions],
    *,
    min_patients: int = MIN_SUBGROUP_PATIENTS,
    n_replicates: int = DEFAULT_SUBGROUP_REPLICATES,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-subgroup AUROC, ECE and robustness drop, and the worst subgroup and gap.

    Parameters
    ----------
    cells : mapping (encoder, dataset) → CellPredictions
        Read by :func:`crsbench.stats.store_predictions.load_store_predictions`; the test
        split's ``metadata`` holds the subgroup attributes.
    min_patients : int
        Fewest distinct patients a subgroup needs; smaller ones are ``too small`` (NaN).
    n_replicates, seed, level
        The paired test-patient bootstrap of the intervals.

    Returns
    -------
    (pandas.DataFrame, pandas.DataFrame)
        ``subgroups``: one row per (encoder, dataset, attribute, subgroup) with ``status``,
        sizes, ``auroc``/``ece``/``robustness_drop`` and their ``_lo``/``_hi``.
        ``worst``: one row per (encoder, dataset, attribute, metric) with the worst subgroup,
        its value (lowest AUROC, highest ECE or drop) and the gap (best − worst, ≥ 0), each
        with its interval.
    """
    sub, worst = [], []
    for cell in cells.values():
        w = row_weights(cell.dataset, cell.test.groups, replicate_ids(n_replicates), seed)
        rows, reps = _cell_subgroups(cell, w, min_patients, level)
        sub += rows
        worst += _worst(cell, reps, level)
    return pd.DataFrame(sub), pd.DataFrame(worst)


def worst_subgroup_ranking(worst: pd.DataFrame, overall_auroc: pd.Series) -> pd.DataFrame:
    """Encoders ranked by their worst-subgroup AUROC beside the overall ranking.

    Parameters
    ----------
    worst : pandas.DataFrame
        The ``worst`` table of :func:`subgroup_analysis`.
    overall_auroc : pandas.Series
        Encoder → mean clean AUROC over the same datasets.

    Returns
    -------
    pandas.DataFrame
        ``encoder``, ``worst_subgroup_auroc`` (per dataset the lowest over attributes, then the
        mean over datasets), ``overall_auroc`` and both ranks (1 = best).
    """
    auc = worst[worst["metric"] == "auroc"]
    per_ds = auc.groupby(["encoder", "dataset"])["worst"].min()
    table = per_ds.groupby("encoder").mean().rename("worst_subgroup_auroc").reset_index()
    table["overall_auroc"] = table["encoder"].map(overall_auroc)
    table["rank_worst_subgroup"] = table["worst_subgroup_auroc"].rank(ascending=False, method="min")
    table["rank_overall"] = table["overall_auroc"].rank(ascending=False, method="min")
    return table.sort_values("rank_worst_subgroup").reset_index(drop=True)
