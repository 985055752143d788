"""The analyses ``crsbench analyze`` runs on the store's per-sample predictions
(:data:`PREDICTION_ANALYSES`): subgroups, operating points and their transfer under shift,
and prediction flips under perturbation."""

from __future__ import annotations

import pandas as pd

from crsbench.stats.analysis_registry import Analysis, AnalysisInputs
from crsbench.stats.flips import prediction_flips
from crsbench.stats.operating_point_loss import kept_by_encoder, operating_point_tables
from crsbench.stats.store_predictions import load_store_predictions
from crsbench.stats.subgroup_crs import worst_subgroup_crs, worst_subgroup_ranking
from crsbench.stats.subgroups import subgroup_analysis

NO_PREDICTIONS = "the store has no per-sample predictions for any complete cell"


def _real(worst: pd.DataFrame) -> list[str]:
    """``encoder/dataset/attribute/axis`` of each gap the permutation test calls real."""
    hits = worst[worst["real_difference"]]
    return [f"{r.encoder}/{r.dataset}/{r.attribute}/{r.metric}" for r in hits.itertuples()]


def predictions_of(x: AnalysisInputs) -> dict:
    """The store's per-sample predictions of ``x``'s cells (read once, kept on ``x``)."""
    if x.predictions is None:
        keys = sorted({(e, d) for e, d in zip(x.cells["encoder"], x.cells["dataset"],
                                              strict=True)})  # fmt: skip
        seeds = sorted(int(s) for s in x.per_seed["seed"].unique())
        found = (
            load_store_predictions(x.store, keys, seeds, compact=True)
            if x.store is not None
            else None
        )
        x.predictions = found.cells if found is not None and found.available else {}
    return x.predictions


def subgroups(x: AnalysisInputs) -> tuple[pd.DataFrame, dict]:
    """Worst subgroup per cell (``subgroup_cells``, ``subgroup_crs``, ``subgroup_ranking``
    beside it)."""
    preds = predictions_of(x)
    if not preds:
        return pd.DataFrame(), {}
    res = subgroup_analysis(preds, n_replicates=max(x.n_replicates, 1), seed=x.seed,
                            n_jobs=x.n_jobs)  # fmt: skip
    x.side["subgroup_cells"] = res.subgroups
    if res.worst.empty:
        return res.worst, {}
    per_cell, reps = worst_subgroup_crs(res, x.cells, x.anchors)
    x.side["subgroup_crs"] = per_cell
    ranking = worst_subgroup_ranking(per_cell, reps)
    x.side["subgroup_ranking"] = ranking
    return res.worst, {
        "too_small": int((res.subgroups["status"] == "too small").sum()),
        "ranking_worst_subgroup_crs": ranking["encoder"].tolist(),
        "real_subgroup_differences": _real(res.worst),
    }


def operating_points(x: AnalysisInputs) -> tuple[pd.DataFrame, dict]:
    """Sensitivity lost when the validation operating point moves to a shift target
    (``operating_point_transfer`` beside it)."""
    preds = predictions_of(x)
    if not preds:
        return pd.DataFrame(), {}
    table, lost = operating_point_tables(preds, max(x.n_replicates, 1), x.seed)
    if table.empty:
        return table, {}
    x.side["operating_point_transfer"] = table
    if lost.empty:
        return lost, {}
    kept = kept_by_encoder(lost)
    few = lost[lost["status"] != "ok"]
    return lost, {"keep_operating_point": kept["keep"],
                  "undecided_operating_point": kept["undecided"],
                  "settings_version": str(table["settings_version"].iloc[0]),
                  "min_positives": int(lost["min_positives"].iloc[0]),
                  "labels_too_few_positives": int(len(few))}  # fmt: skip


PREDICTION_ANALYSES: tuple[Analysis, ...] = (
    Analysis(
        "subgroups",
        ("predictions", "cells", "anchors", "n_replicates", "seed", "n_jobs"),
        subgroups,
        NO_PREDICTIONS + " (or no subgroup metadata)",
    ),
    Analysis(
        "operating_points",
        ("predictions", "n_replicates", "seed"),
        operating_points,
        NO_PREDICTIONS + " with validation predictions and a shift target",
    ),
    Analysis(
        "prediction_flips",
        ("predictions",),
        lambda x: prediction_flips(predictions_of(x)),
        NO_PREDICTIONS,
    ),
)
