"""The tables behind the subgroup, operating-point and flip sections, computed once from the
store's per-sample predictions (:mod:`crsbench.stats.store_predictions`).

A store without per-sample predictions (or a part without the rows it needs) leaves that part
``None`` with its reason in :attr:`PredictionData.missing`, which the page shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from crsbench.report.data import ReportData

NO_PREDICTIONS = (
    "the store has no per-sample predictions for any complete cell (stores written before "
    "predictions were stored, or cells run without them)"
)


@dataclass
class PredictionData:
    """Subgroup tables, worst-subgroup CRS and ranking, operating points, flips."""

    subgroups: pd.DataFrame | None = None
    worst: pd.DataFrame | None = None
    subgroup_crs: pd.DataFrame | None = None
    ranking: pd.DataFrame | None = None
    transfer: pd.DataFrame | None = None
    lost: pd.DataFrame | None = None
    flips: pd.DataFrame | None = None
    min_patients: int = 0
    n_replicates: int = 0
    missing: dict[str, str] = field(default_factory=dict)


def _cells(d: ReportData) -> dict:
    from crsbench.stats.store_predictions import load_store_predictions

    if d.store_dir is None:
        return {}
    keys = sorted(set(zip(d.cells["encoder"], d.cells["dataset"], strict=True)))
    seeds = sorted(int(s) for s in d.runs["seed"].dropna().unique())
    found = load_store_predictions(d.store_dir, keys, seeds)
    return found.cells if found.available else {}


def _add_subgroups(d: ReportData, preds: dict, out: PredictionData) -> None:
    from crsbench.stats.subgroup_crs import worst_subgroup_crs, worst_subgroup_ranking
    from crsbench.stats.subgroups import subgroup_analysis

    res = subgroup_analysis(preds, n_replicates=out.n_replicates, seed=d.seed)
    if res.subgroups.empty:
        out.missing["subgroups"] = "no test split carries subgroup metadata (sex, age, view, site)"
        return
    out.subgroups, out.worst = res.subgroups, res.worst
    if res.axes:
        out.subgroup_crs, reps = worst_subgroup_crs(res, d.cells, d.anchors)
        out.ranking = worst_subgroup_ranking(out.subgroup_crs, reps)
    else:
        out.missing["ranking"] = "every subgroup is below the minimum size"


def _add_operating_points(preds: dict, out: PredictionData, seed: int) -> None:
    from crsbench.stats.operating_point_loss import operating_point_tables

    table, lost = operating_point_tables(preds, out.n_replicates, seed)
    if table.empty:
        out.missing["operating_points"] = "the store has no validation predictions"
        return
    out.transfer = table
    if lost.empty:
        out.missing["transfer"] = "the store has no shift target with predictions"
    else:
        out.lost = lost


def compute_predictions(d: ReportData) -> PredictionData:
    """Compute every table of the three sections from ``d``'s store."""
    from crsbench.stats.flips import prediction_flips
    from crsbench.stats.subgroups import MIN_SUBGROUP_PATIENTS

    out = PredictionData(min_patients=MIN_SUBGROUP_PATIENTS, n_replicates=max(d.n_replicates, 1))
    preds = _cells(d)
    if not preds:
        for key in ("subgroups", "operating_points", "flips"):
            out.missing[key] = NO_PREDICTIONS
        return out
    _add_subgroups(d, preds, out)
    _add_operating_points(preds, out, d.seed)
    flips = prediction_flips(preds)
    if flips.empty:
        out.missing["flips"] = "no perturbed predictions (or no validation predictions)"
    else:
        out.flips = flips
    return out
