"""Per-cell scores from per-seed axes, and aggregates per encoder and per domain.

A cell that does not exist is not a row. A cell that exists but lacks an axis keeps its row
with a NaN CRS and the reason in ``missing``; every aggregate over it is NaN, never imputed
and never a mean of the cells that happen to be complete.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from crsbench.protocol import FROZEN
from crsbench.scoring import notes as nt
from crsbench.scoring.anchors import AXES, Anchors
from crsbench.scoring.axes import seed_means
from crsbench.scoring.crs import SCORE_COLUMNS, crs_table
from crsbench.scoring.planned import PlanSource, planned_axes

#: Dataset → clinical domain, for per-domain reporting.
DOMAINS = {"isic2019": "dermatology", "aptos2019": "ophthalmology", "chexpert": "radiology",
           "mimic_cxr": "radiology", "nih_cxr14": "radiology", "padchest": "radiology",
           "vindr_cxr": "radiology"}  # fmt: skip
#: Robustness beside R: the extras alone, R's conditions with the extras, and the named
#: variant counting every shift target (docs/scoring.md).
EXTRA_COLUMNS: tuple[str, ...] = (
    "robustness_drop_extra",
    "robustness_drop_with_extra",
    "robustness_drop_all_shifts",
)


def score_cells(
    per_seed: pd.DataFrame,
    anchors: str | Anchors | None = None,
    rule: str = "fixed",
    weights: dict[str, float] | None = None,
) -> pd.DataFrame:
    """Seed means per (encoder, dataset), then the CRS of each complete cell.

    Every cell of ``per_seed`` stays in the table. A cell with a NaN axis gets NaN utilities,
    components and CRS, its ``missing`` column says why, and a :class:`UserWarning` names it;
    it is never imputed, and under the cohort rule it is not part of the cohort.
    """
    cells = seed_means(per_seed)
    complete = cells[list(AXES)].notna().all(axis=1)
    if not complete.all():
        left = cells.loc[~complete]
        warnings.warn(
            "cells not scored (an axis is NaN): "
            + "; ".join(f"{e}/{d} [{m}]" for e, d, m in
                        zip(left["encoder"], left["dataset"], left["missing"], strict=True)),
            UserWarning,
            stacklevel=2,
        )  # fmt: skip
    scored = crs_table(cells[complete], anchors, rule=rule, weights=weights)
    out = pd.concat([scored, cells[~complete]], ignore_index=True) if complete.any() else cells
    for col in SCORE_COLUMNS:
        if col not in out:
            out[col] = np.nan
    for meta in ("rule", "anchors_version"):
        out[meta] = scored[meta].iloc[0] if len(scored) else _meta(anchors, rule)[meta]
    return out.sort_values(["encoder", "dataset"]).reset_index(drop=True)


def _meta(anchors: str | Anchors | None, rule: str) -> dict[str, str]:
    from crsbench.scoring.anchors import load_anchors

    return {"rule": rule, "anchors_version": load_anchors(anchors).version}


def score_runs(
    runs: pd.DataFrame,
    anchors: str | Anchors | None = None,
    rule: str = "fixed",
    regime: str = FROZEN,
    include_shift: bool = True,
    plan: PlanSource = None,
) -> pd.DataFrame:
    """Run records → per-cell CRS table (main protocol of ``regime``); what each cell must
    hold comes from ``plan`` (a recorded plan or its store,
    :func:`crsbench.scoring.planned.planned_axes`)."""
    per_seed = planned_axes(runs, plan, regime, include_shift=include_shift)
    return score_cells(per_seed, anchors, rule)


def aggregate_by_encoder(cells: pd.DataFrame) -> pd.DataFrame:
    """Per encoder: mean over its cells of every axis, utility, component and the CRS
    (docs/protocol.md §8.4), ``n_cells``, ``n_cells_scored``, ``missing`` and the
    rule / anchors version of the scores.

    Every cell of ``cells`` is one the encoder is expected to have (cells excluded from the
    grid are simply not rows). A NaN cell makes the encoder's mean NaN, never a mean of the
    cells that happen to be scored; ``missing`` names each such cell and why, and the ranks of
    an encoder without a CRS (or AUROC) are missing (``<NA>``).
    """
    cols = [c for c in (*AXES, "aulc", *EXTRA_COLUMNS, *SCORE_COLUMNS) if c in cells]
    g = cells.groupby("encoder", sort=True)
    out = g[cols].mean(skipna=False)
    out.insert(0, "n_cells", g.size())
    out.insert(1, "n_cells_scored", g["CRS"].count() if "CRS" in cells else 0)
    for meta in ("rule", "anchors_version"):
        if meta in cells:
            out[meta] = g[meta].first()
    out["missing"] = g.apply(_encoder_note, include_groups=False) if "missing" in cells else ""
    out = out.reset_index()
    out["rank_crs"] = out["CRS"].rank(ascending=False, method="min").astype("Int64")
    out["rank_auroc"] = out["auroc"].rank(ascending=False, method="min").astype("Int64")
    return out.sort_values(["CRS", "encoder"], ascending=[False, True], na_position="last"
                           ).reset_index(drop=True)  # fmt: skip


def _encoder_note(grp: pd.DataFrame) -> str:
    """``"chexpert: R: condition jpeg/3 missing (seed 2)"`` for each cell with a note."""
    parts = [f"{ds}: {note}" for ds, note in zip(grp["dataset"], grp["missing"], strict=True)
             if isinstance(note, str) and note]  # fmt: skip
    return nt.SEP.join(parts)


def per_domain(cells: pd.DataFrame, values: tuple[str, ...] = ("CRS", "auroc")) -> pd.DataFrame:
    """Long table: encoder, dataset, domain and the requested values per existing cell."""
    out = cells[["encoder", "dataset", *values]].copy()
    out.insert(2, "domain", out["dataset"].map(DOMAINS).fillna(out["dataset"]))
    return out.sort_values(["dataset", values[0]], ascending=[True, False]).reset_index(drop=True)


def encoder_means(cells: pd.DataFrame, column: str) -> dict[str, float]:
    """Encoder → mean of ``column`` over its cells; an encoder with a NaN cell is left out
    (never a mean of its available cells)."""
    s = cells.groupby("encoder")[column].mean(skipna=False)
    return {k: float(v) for k, v in s.items() if np.isfinite(v)}
