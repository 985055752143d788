"""Per-cell scores from per-seed axes, and aggregates per encoder and per domain.

A cell that does not exist (or lacks an axis) is left out of every aggregate, never imputed.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from crsbench.scoring.anchors import AXES, Anchors
from crsbench.scoring.axes import axes_from_runs, seed_means
from crsbench.scoring.crs import SCORE_COLUMNS, crs_table

#: Dataset → clinical domain, for per-domain reporting.
DOMAINS = {"isic2019": "dermatology", "aptos2019": "ophthalmology", "chexpert": "radiology",
           "mimic_cxr": "radiology"}  # fmt: skip


def score_cells(
    per_seed: pd.DataFrame,
    anchors: str | Anchors | None = None,
    rule: str = "fixed",
    weights: dict[str, float] | None = None,
) -> pd.DataFrame:
    """Seed means per (encoder, dataset), then the CRS of each complete cell.

    Cells with a missing axis are dropped with a :class:`UserWarning` naming them.
    """
    cells = seed_means(per_seed)
    complete = cells[list(AXES)].notna().all(axis=1)
    if not complete.all():
        dropped = cells.loc[~complete, ["encoder", "dataset"]].itertuples(index=False)
        warnings.warn(
            "cells left out (an axis has no data): " + ", ".join(f"{e}/{d}" for e, d in dropped),
            UserWarning,
            stacklevel=2,
        )
    return crs_table(cells[complete], anchors, rule=rule, weights=weights)


def score_runs(
    runs: pd.DataFrame,
    anchors: str | Anchors | None = None,
    rule: str = "fixed",
    regime: str = "frozen",
    include_shift: bool = True,
) -> pd.DataFrame:
    """Run records → per-cell CRS table (main protocol of ``regime``)."""
    return score_cells(
        axes_from_runs(runs, regime=regime, include_shift=include_shift), anchors, rule
    )


def aggregate_by_encoder(cells: pd.DataFrame) -> pd.DataFrame:
    """Per encoder: mean over its available cells of every axis, utility, component and the
    CRS (docs/protocol.md §8.4), ``n_cells``, and the rule / anchors version of the scores."""
    cols = [c for c in (*AXES, "aulc", *SCORE_COLUMNS) if c in cells]
    g = cells.groupby("encoder", sort=True)
    out = g[cols].mean()
    out.insert(0, "n_cells", g.size())
    for meta in ("rule", "anchors_version"):
        if meta in cells:
            out[meta] = g[meta].first()
    out = out.reset_index()
    out["rank_crs"] = out["CRS"].rank(ascending=False, method="min").astype(int)
    out["rank_auroc"] = out["auroc"].rank(ascending=False, method="min").astype(int)
    return out.sort_values(["CRS", "encoder"], ascending=[False, True]).reset_index(drop=True)


def per_domain(cells: pd.DataFrame, values: tuple[str, ...] = ("CRS", "auroc")) -> pd.DataFrame:
    """Long table: encoder, dataset, domain and the requested values per existing cell."""
    out = cells[["encoder", "dataset", *values]].copy()
    out.insert(2, "domain", out["dataset"].map(DOMAINS).fillna(out["dataset"]))
    return out.sort_values(["dataset", values[0]], ascending=[True, False]).reset_index(drop=True)


def encoder_means(cells: pd.DataFrame, column: str) -> dict[str, float]:
    """Encoder → mean of ``column`` over its cells (NaN cells ignored)."""
    s = cells.groupby("encoder")[column].mean()
    return {k: float(v) for k, v in s.items() if np.isfinite(v)}
