"""Row selection shared by the analyses: the main-protocol slices of a ``runs`` table."""

from __future__ import annotations

import numpy as np
import pandas as pd

from crsbench.scoring.axes import check_runs

CELL = ["encoder", "dataset"]


def select(
    runs: pd.DataFrame,
    regime: str = "frozen",
    probe: str | None = "logistic",
    layer: float | None = 1.0,
    fraction: float | None = 1.0,
    condition: str | None = "clean",
    recalibrator: str | None = "none",
    own_eval: bool | None = True,
) -> pd.DataFrame:
    """Rows matching every given filter (``None`` = any value)."""
    check_runs(runs)
    keep = runs["regime"] == regime
    if probe is not None:
        keep &= runs["probe"] == probe
    if layer is not None:
        keep &= np.isclose(runs["layer"].astype(float), layer)
    if fraction is not None:
        keep &= np.isclose(runs["fraction"].astype(float), fraction)
    if condition is not None:
        keep &= runs["condition"] == condition
    if recalibrator is not None:
        keep &= runs["recalibrator"] == recalibrator
    if own_eval is True:
        keep &= runs["eval_dataset"] == runs["dataset"]
    elif own_eval is False:
        keep &= runs["eval_dataset"] != runs["dataset"]
    return runs.loc[keep]


def seed_mean(rows: pd.DataFrame, keys: list[str], column: str = "auroc") -> pd.Series:
    """Mean over seeds of ``column`` per ``keys`` (seeds first averaged within a key)."""
    return rows.groupby(keys, sort=True)[column].mean()
