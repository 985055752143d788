"""The insertion experiment: do published scores move when new encoders join the panel?

Each trial draws a base panel of 12 encoders and 3 newcomers, scores the base panel alone
(the "published" aggregate CRS), scores base + newcomers, and measures how far each of the 12
published scores moved, under the fixed-anchor rule and under cohort renormalisation.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from crsbench.core.errors import ConfigError, DataError
from crsbench.scoring.anchors import AXES, Anchors, load_anchors
from crsbench.scoring.crs import RULES, crs_table


def _aggregate(cells: pd.DataFrame, anchors: Anchors, rule: str) -> pd.Series:
    scored = crs_table(cells, anchors, rule=rule)
    return scored.groupby("encoder", sort=True)["CRS"].mean()


def generated_profiles(cells: pd.DataFrame, n: int, rng: np.random.Generator) -> pd.DataFrame:
    """``n`` synthetic encoders whose per-dataset axes are drawn from a normal fitted to the
    store's cells of that dataset (mean and spread per axis), clipped to valid ranges."""
    rows = []
    for ds, grp in cells.groupby("dataset", sort=True):
        mu = grp[list(AXES)].mean().to_numpy()
        sd = grp[list(AXES)].std(ddof=0).fillna(0).to_numpy() + 1e-3
        draws = rng.normal(mu, sd, size=(n, len(AXES)))
        draws[:, 0] = np.clip(draws[:, 0], 0.5, 1.0)
        draws[:, 1:] = np.clip(draws[:, 1:], 0.0, None)
        draws[:, 2] = np.clip(draws[:, 2], 0.0, 1.0)
        for i in range(n):
            rows.append({"encoder": f"generated_{i + 1:03d}", "dataset": ds,
                         **dict(zip(AXES, draws[i], strict=True))})  # fmt: skip
    return pd.DataFrame(rows)


def insertion_experiment(
    cells: pd.DataFrame,
    anchors: str | Anchors | None = None,
    n_trials: int = 30,
    n_base: int = 12,
    n_insert: int = 3,
    seed: int = 0,
) -> pd.DataFrame:
    """Displacement of published scores when ``n_insert`` encoders join a panel of ``n_base``.

    Parameters
    ----------
    cells : pandas.DataFrame
        Seed-mean axes per (encoder, dataset). An encoder with a NaN axis in any cell has no
        published aggregate CRS and is left out.
    anchors : anchors source, optional
        For the fixed rule (and the weights of both).
    n_trials, n_base, n_insert : int
        Paper: 30 trials, 3 encoders into 12.
    seed : int
        Seed of the trial sampler.

    Returns
    -------
    pandas.DataFrame
        One row per (trial, rule): ``mean_displacement``, ``max_displacement`` (over the
        ``n_base`` published aggregate CRS values) and ``source`` (``store`` when the
        encoders were sampled from the store, ``generated`` when it had too few).
    """
    for name, v in (("n_trials", n_trials), ("n_base", n_base), ("n_insert", n_insert)):
        if not isinstance(v, int) or v < 1:
            raise ConfigError(f"{name} must be a positive integer. Got {v!r} instead.")
    unscored = cells.loc[~cells[list(AXES)].notna().all(axis=1), "encoder"]
    cells = cells[~cells["encoder"].isin(unscored)]  # no published aggregate CRS to move
    if cells.empty:
        raise DataError("insertion experiment needs scored cells. Got an empty table.")
    anc = load_anchors(anchors)
    rng = np.random.default_rng(seed)
    encoders = sorted(cells["encoder"].unique())
    need = n_base + n_insert
    source = "store"
    pool = cells
    if len(encoders) < need:
        source = "generated"
        pool = pd.concat([cells, generated_profiles(cells, need, rng)], ignore_index=True)
    rows = []
    for trial in range(n_trials):
        if source == "store":
            chosen = list(rng.choice(encoders, size=need, replace=False))
        else:
            extra = sorted(set(pool["encoder"]) - set(encoders))
            chosen = list(rng.permutation(encoders)) + list(
                rng.choice(extra, size=need - len(encoders), replace=False)
            )
            chosen = list(rng.permutation(chosen))
        base, new = chosen[:n_base], chosen[n_base:]
        base_cells = pool[pool["encoder"].isin(base)]
        all_cells = pool[pool["encoder"].isin(base + new)]
        for rule in RULES:
            before = _aggregate(base_cells, anc, rule)
            after = _aggregate(all_cells, anc, rule).loc[before.index]
            disp = (after - before).abs().to_numpy()
            rows.append(
                {
                    "trial": trial,
                    "rule": rule,
                    "mean_displacement": float(disp.mean()),
                    "max_displacement": float(disp.max()),
                    "source": source,
                }
            )
    return pd.DataFrame(rows)


def insertion_summary(trials: pd.DataFrame) -> pd.DataFrame:
    """Per rule: mean over trials of the mean displacement, and the largest displacement."""
    g = trials.groupby("rule", sort=True)
    return pd.DataFrame(
        {
            "mean_displacement": g["mean_displacement"].mean(),
            "max_displacement": g["max_displacement"].max(),
            "n_trials": g["trial"].nunique(),
        }
    ).reset_index()
