"""From run records to the four axes: per (encoder, dataset, seed), then seed means.

The *main protocol* rows (docs/protocol.md section 7) are ``probe='logistic'``, ``layer=1.0``,
``recalibrator='none'`` in one regime (``'frozen'`` by default). From those:

- D (``auroc``) and C (``ece``): ``fraction=1.0``, ``condition='clean'``, ``eval_dataset=dataset``;
- L (``retention``, and ``aulc``): clean rows over the label fractions;
- R (``robustness_drop``): ``fraction=1.0`` rows of every perturbation condition, plus the
  ``condition='shift'`` rows (another ``eval_dataset``) as further conditions.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from crsbench.core.errors import DataError, StoreError
from crsbench.core.schema import IDENTITY_COLUMNS
from crsbench.core.storefile import STORE_FILE, read_tables

REQUIRED_COLUMNS: tuple[str, ...] = (*IDENTITY_COLUMNS, "auroc", "ece")
AXIS_TABLE_COLUMNS: tuple[str, ...] = (
    "auroc",
    "ece",
    "retention",
    "aulc",
    "robustness_drop",
    "shift_auroc",
)
NON_PERTURBATION = ("clean", "shift")


def load_runs(store_dir: str | Path, table: str = "runs") -> pd.DataFrame:
    """Read the ``runs`` table of ``store_dir/results.duckdb`` through a read-only connection.

    Raises
    ------
    StoreError
        The store file or table is missing, locked or unreadable.
    """
    path = Path(store_dir) / STORE_FILE
    found = read_tables(path, (table,))
    if table not in found:
        raise StoreError(f"results store {path} must have a table '{table}'. It has none.")
    df = found[table]
    if table == "runs":
        check_runs(df, str(path))
    return df


def check_runs(runs: pd.DataFrame, source: str = "runs") -> pd.DataFrame:
    """Raise :class:`DataError` when a required column is missing."""
    missing = [c for c in REQUIRED_COLUMNS if c not in runs.columns]
    if missing:
        raise DataError(f"{source} must have columns {missing}. Got {list(runs.columns)} instead.")
    return runs


def main_protocol(
    runs: pd.DataFrame, regime: str = "frozen", probe: str = "logistic", layer: float = 1.0
) -> pd.DataFrame:
    """The rows of ``runs`` that feed the axes: one regime, one probe, one layer, no recalibration."""
    check_runs(runs)
    keep = (
        (runs["regime"] == regime)
        & (runs["probe"] == probe)
        & np.isclose(runs["layer"].astype(float), layer)
        & (runs["recalibrator"] == "none")
    )
    return runs.loc[keep]


def _pivot_mean(df: pd.DataFrame, keys: list[str], column: str) -> pd.Series:
    return df.groupby(keys, sort=True)[column].mean()


def axes_from_runs(
    runs: pd.DataFrame,
    regime: str = "frozen",
    include_shift: bool = True,
    probe: str = "logistic",
    layer: float = 1.0,
) -> pd.DataFrame:
    """The four axes per (encoder, dataset, seed) from run records.

    Parameters
    ----------
    runs : pandas.DataFrame
        The store's ``runs`` table (see :data:`REQUIRED_COLUMNS`).
    regime, probe, layer : str, str, float
        Which rows are the protocol's main rows.
    include_shift : bool
        Count the shift rows as robustness conditions (``False`` gives the "CRS without the
        shift target" of the external-validity analysis).

    Returns
    -------
    pandas.DataFrame
        Columns ``encoder, dataset, seed, auroc, ece, retention, aulc, robustness_drop,
        shift_auroc, n_conditions``; a cell with no clean full-label row is absent, an axis
        without data is NaN.
    """
    from crsbench.metrics import aulc, retention, robustness_drop

    m = main_protocol(runs, regime=regime, probe=probe, layer=layer)
    keys = ["encoder", "dataset", "seed"]
    own = m[m["eval_dataset"] == m["dataset"]]
    full = np.isclose(own["fraction"].astype(float), 1.0)
    clean_full = own[full & (own["condition"] == "clean")]
    if clean_full.empty:
        return pd.DataFrame(columns=[*keys, *AXIS_TABLE_COLUMNS, "n_conditions"])
    base = clean_full.groupby(keys, sort=True)[["auroc", "ece"]].mean()

    clean = own[own["condition"] == "clean"]
    curves = clean.groupby([*keys, "fraction"], sort=True)["auroc"].mean().unstack("fraction")
    pert = own[full & ~own["condition"].isin(NON_PERTURBATION)]
    pert_lists = pert.groupby(keys, sort=True)["auroc"].apply(list)
    shift = m[
        np.isclose(m["fraction"].astype(float), 1.0)
        & (m["condition"] == "shift")
        & (m["eval_dataset"] != m["dataset"])
    ]
    shift_lists = shift.groupby(keys, sort=True)["auroc"].apply(list)

    rows = []
    for key, (d_auc, c_ece) in base.iterrows():
        curve = {}
        if key in curves.index:
            curve = {float(f): float(v) for f, v in curves.loc[key].items() if np.isfinite(v)}
        low = [f for f in curve if f < 1.0]
        ret = retention(curve, fractions=tuple(sorted(low))) if low and 1.0 in curve else np.nan
        auc_l = aulc(curve) if low and 1.0 in curve else np.nan
        perturbed = list(pert_lists.get(key, []))
        shifts = list(shift_lists.get(key, [])) if include_shift else []
        if perturbed or shifts:
            conds = perturbed + shifts[1:]
            first_shift = shifts[0] if shifts else None
            if conds:
                r_drop = robustness_drop(d_auc, conds, shift_auroc=first_shift)
            else:
                r_drop = robustness_drop(d_auc, [first_shift])
        else:
            r_drop = np.nan
        all_shift = list(shift_lists.get(key, []))
        rows.append(
            (
                *key,
                float(d_auc),
                float(c_ece),
                float(ret),
                float(auc_l),
                float(r_drop),
                float(np.mean(all_shift)) if all_shift else np.nan,
                len(perturbed) + len(shifts),
            )
        )
    return pd.DataFrame(rows, columns=[*keys, *AXIS_TABLE_COLUMNS, "n_conditions"])


def seed_means(axes: pd.DataFrame) -> pd.DataFrame:
    """Mean of each axis over seeds, per (encoder, dataset), with ``n_seeds``."""
    cols = [c for c in AXIS_TABLE_COLUMNS if c in axes.columns]
    grouped = axes.groupby(["encoder", "dataset"], sort=True)
    out = grouped[cols].mean()
    out["n_seeds"] = grouped["seed"].nunique()
    return out.reset_index()
