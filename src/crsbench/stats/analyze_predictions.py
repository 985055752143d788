"""The analyses ``crsbench analyze`` runs on the store's per-sample predictions: subgroups,
operating points and their transfer under shift, and prediction flips under perturbation."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from crsbench.core.diskio import write_csv_atomic
from crsbench.scoring.anchors import Anchors
from crsbench.stats.flips import prediction_flips
from crsbench.stats.operating_point_loss import kept_by_encoder, operating_point_tables
from crsbench.stats.store_predictions import load_store_predictions
from crsbench.stats.subgroup_crs import worst_subgroup_crs, worst_subgroup_ranking
from crsbench.stats.subgroups import subgroup_analysis

Emit = Callable[..., None]
_NO_PREDICTIONS = "the store has no per-sample predictions for any complete cell"


def _real(worst: pd.DataFrame) -> list[str]:
    """``encoder/dataset/attribute/axis`` of each gap the permutation test calls real."""
    hits = worst[worst["real_difference"]]
    return [f"{r.encoder}/{r.dataset}/{r.attribute}/{r.metric}" for r in hits.itertuples()]


def emit_prediction_analyses(
    emit: Emit,
    out: Path,
    store: str | Path | None,
    cells: pd.DataFrame,
    per_seed: pd.DataFrame,
    n_replicates: int,
    seed: int,
    anchors: Anchors,
) -> None:
    """Emit ``subgroups`` (and ``subgroup_cells.csv``, ``subgroup_crs.csv``,
    ``subgroup_ranking.csv``),
    ``operating_points`` (and ``operating_point_transfer.csv``) and ``prediction_flips``
    through :func:`crsbench.stats.run_analyses`'s ``emit``."""
    keys = sorted({(e, d) for e, d in zip(cells["encoder"], cells["dataset"], strict=True)})
    seeds = sorted(int(s) for s in per_seed["seed"].unique())
    found = load_store_predictions(store, keys, seeds) if store is not None else None
    preds = found.cells if found is not None and found.available else {}

    def subgroups() -> tuple[pd.DataFrame, dict]:
        if not preds:
            return pd.DataFrame(), {}
        res = subgroup_analysis(preds, n_replicates=max(n_replicates, 1), seed=seed)
        write_csv_atomic(res.subgroups, out / "subgroup_cells.csv", index=False)
        if res.worst.empty:
            return res.worst, {}
        per_cell, reps = worst_subgroup_crs(res, cells, anchors)
        write_csv_atomic(per_cell, out / "subgroup_crs.csv", index=False)
        ranking = worst_subgroup_ranking(per_cell, reps)
        write_csv_atomic(ranking, out / "subgroup_ranking.csv", index=False)
        return res.worst, {
            "too_small": int((res.subgroups["status"] == "too small").sum()),
            "ranking_worst_subgroup_crs": ranking["encoder"].tolist(),
            "real_subgroup_differences": _real(res.worst),
        }

    def operating_points() -> tuple[pd.DataFrame, dict]:
        if not preds:
            return pd.DataFrame(), {}
        table, lost = operating_point_tables(preds, max(n_replicates, 1), seed)
        if table.empty:
            return table, {}
        write_csv_atomic(table, out / "operating_point_transfer.csv", index=False)
        if lost.empty:
            return lost, {}
        kept = kept_by_encoder(lost)
        few = lost[lost["status"] != "ok"]
        return lost, {"keep_operating_point": kept["keep"],
                      "undecided_operating_point": kept["undecided"],
                      "settings_version": str(table["settings_version"].iloc[0]),
                      "min_positives": int(lost["min_positives"].iloc[0]),
                      "labels_too_few_positives": int(len(few))}  # fmt: skip

    emit("subgroups", subgroups, _NO_PREDICTIONS + " (or no subgroup metadata)")
    emit("operating_points", operating_points,
         _NO_PREDICTIONS + " with validation predictions and a shift target")  # fmt: skip
    emit("prediction_flips", lambda: prediction_flips(preds), _NO_PREDICTIONS)
