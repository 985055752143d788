"""Calibration analyses: post-hoc recalibration effect, and calibration under perturbation."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from scipy import stats as sps

from crsbench.core.errors import ConfigError
from crsbench.protocol import FROZEN, PAPER_CONDITIONS, condition_roles
from crsbench.store.columns import CELL_COLUMNS
from crsbench.store.reader import select_runs


def mean_ci(
    values: np.ndarray, n_boot: int = 2_000, seed: int = 0, level: float = 0.95
) -> tuple[float, float, float]:
    """Mean of ``values`` and the 2.5–97.5 % spread of its bootstrap over the values (a
    bootstrap range over cells: how much the mean depends on which cells; not a 95 % CI of
    any population value, none being sampled), vectorised."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return np.nan, np.nan, np.nan
    if n_boot < 1:
        raise ConfigError(f"n_boot must be a positive integer. Got {n_boot!r} instead.")
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, v.size, size=(n_boot, v.size))].mean(axis=1)
    alpha = (1 - level) / 2
    return float(v.mean()), float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha))


def recalibration_effect(
    runs: pd.DataFrame, regime: str = FROZEN, n_boot: int = 2_000, seed: int = 0
) -> pd.DataFrame:
    """Per recalibration method: ECE before/after, relative reduction, mean absolute reduction
    (with its bootstrap range over cells in ``abs_reduction_ci_low``/``_high``, kept under
    their old names) and AUROC delta (``auroc_delta_ci_low``/``_high``, the same kind of range).

    Cells are (encoder, dataset) seed means of the clean, full-label main-protocol rows;
    "before" is ``recalibrator='none'``. A cell with any seed whose recalibrated ECE is NaN
    (e.g. its calibration split is below the protocol's minimum) is left out of the effect and
    counted in ``n_cells_undefined``; ``identity_share`` is the share of recalibrated rows where
    cross-validation kept the identity map (from ``details``, when the column is present).
    """
    rows = select_runs(runs, regime=regime, recalibrator=None)
    keys = [*CELL_COLUMNS, "seed"]
    base = rows[rows["recalibrator"] == "none"].groupby(keys)[["ece", "auroc"]].mean()
    out = []
    for method, grp in rows[rows["recalibrator"] != "none"].groupby("recalibrator", sort=True):
        after = grp.groupby(keys)[["ece", "auroc"]].mean()
        joined = base.add_suffix("_before").join(after.add_suffix("_after"), how="inner")
        undefined = joined["ece_after"].isna().groupby(level=[0, 1]).any()
        cells = joined.groupby(level=[0, 1]).mean()[~undefined]
        if cells.empty and not undefined.any():
            continue
        abs_red = (cells["ece_before"] - cells["ece_after"]).to_numpy()
        delta = (cells["auroc_after"] - cells["auroc_before"]).to_numpy()
        red, red_lo, red_hi = mean_ci(abs_red, n_boot, seed)
        d, d_lo, d_hi = mean_ci(delta, n_boot, seed + 1)
        before, after_m = cells["ece_before"].mean(), cells["ece_after"].mean()
        out.append(
            {
                "method": method,
                "n_cells": len(cells),
                "n_cells_undefined": int(undefined.sum()),
                "identity_share": _identity_share(grp),
                "ece_before": before,
                "ece_after": after_m,
                "relative_reduction": 1.0 - after_m / before if before > 0 else np.nan,
                "mean_abs_reduction": red,
                "abs_reduction_ci_low": red_lo,
                "abs_reduction_ci_high": red_hi,
                "auroc_delta": d,
                "auroc_delta_ci_low": d_lo,
                "auroc_delta_ci_high": d_hi,
            }
        )
    return pd.DataFrame(out)


def _identity_share(rows: pd.DataFrame) -> float:
    """Share of rows whose ``details`` record ``recal_choice == "identity"`` (NaN without them)."""
    if "details" not in rows.columns:
        return np.nan
    choices = [json.loads(d).get("recal_choice") if d else None for d in rows["details"]]
    known = [c for c in choices if c in ("fitted", "identity", "mixed")]
    return float(np.mean([c == "identity" for c in known])) if known else np.nan


def _perturbation_cells(runs: pd.DataFrame, regime: str) -> pd.DataFrame:
    """Per (cell, condition, severity): seed-mean AUROC / ECE beside the clean ones, the AUROC
    drop, the ECE increase and the condition's ``kind`` (``paper`` or ``extra``)."""
    clean = (
        select_runs(runs, regime=regime)
        .groupby(list(CELL_COLUMNS))[["auroc", "ece"]]
        .mean(skipna=False)
    )
    pert = select_runs(runs, regime=regime, condition=None)
    roles = condition_roles(pert["condition"], pert["severity"])
    pert = pert[np.isin(roles, ["paper", "extra"])]
    per = pert.groupby([*CELL_COLUMNS, "condition", "severity"])[["auroc", "ece"]].mean(
        skipna=False
    )
    joined = per.join(clean.add_suffix("_clean"), how="inner").reset_index()
    joined["auroc_drop"] = joined["auroc_clean"] - joined["auroc"]
    joined["ece_increase"] = joined["ece"] - joined["ece_clean"]
    joined["kind"] = condition_roles(joined["condition"], joined["severity"])
    return joined


def ece_increase_by_condition(runs: pd.DataFrame, regime: str = FROZEN) -> pd.DataFrame:
    """Per (perturbation, severity): mean ECE increase and AUROC drop over cells, with the
    condition's ``kind``: the 15 ``paper`` conditions first, the ``extra`` ones after (reported
    beside, never pooled with them)."""
    cells = _perturbation_cells(runs, regime)
    g = cells.groupby(["kind", "condition", "severity"], sort=True)
    out = pd.DataFrame(
        {
            "ece_increase": g["ece_increase"].mean(),
            "ece_increase_sd": g["ece_increase"].std(ddof=1),
            "auroc_drop": g["auroc_drop"].mean(),
            "n_cells": g["ece_increase"].size(),
        }
    ).reset_index()
    order = out["kind"].map({"paper": 0, "extra": 1})
    out = out.assign(_o=order).sort_values(["_o", "condition", "severity"]).drop(columns="_o")
    return out[["condition", "severity", "kind", *out.columns[3:]]].reset_index(drop=True)


def discrimination_calibration_correlation(
    runs: pd.DataFrame, regime: str = FROZEN
) -> pd.DataFrame:
    """Across cells: Pearson and Spearman correlation of the mean AUROC drop (discrimination
    loss) with the mean ECE increase (calibration loss) over the 15 paper conditions.

    A cell lacking one of the 15 (or with a NaN value) is not averaged over the rest: it is
    left out and counted in ``n_cells_incomplete``.
    """
    paper = _perturbation_cells(runs, regime)
    paper = paper[paper["kind"] == "paper"]
    g = paper.groupby(list(CELL_COLUMNS))
    cells = g[["auroc_drop", "ece_increase"]].mean()
    whole = (g.size() == len(PAPER_CONDITIONS)) & cells.notna().all(axis=1)
    incomplete = int((~whole).sum())
    cells = cells[whole]
    if len(cells) < 3:
        return pd.DataFrame()
    r = sps.pearsonr(cells["auroc_drop"], cells["ece_increase"])
    rho = sps.spearmanr(cells["auroc_drop"], cells["ece_increase"])
    return pd.DataFrame(
        [
            {
                "n_cells": len(cells),
                "n_cells_incomplete": incomplete,
                "pearson_r": float(r.statistic),
                "pearson_p": float(r.pvalue),
                "spearman_rho": float(rho.statistic),
                "spearman_p": float(rho.pvalue),
            }
        ]
    )
