"""Layer-depth sweep: best depth per encoder and its gain over the last block."""

from __future__ import annotations

import numpy as np
import pandas as pd

from crsbench.stats._select import select


def layer_depth(runs: pd.DataFrame, regime: str = "frozen", by_cell: bool = False) -> pd.DataFrame:
    """Per encoder (or per cell): seed-mean clean full-label AUROC at each depth, the best
    depth, and ``gain_over_last`` = AUROC at the best depth − AUROC at depth 1.0.

    Per-encoder values average the encoder's cells that have every depth.
    """
    rows = select(runs, regime=regime, layer=None)
    per = rows.groupby(["encoder", "dataset", "layer"])["auroc"].mean().unstack("layer")
    per = per.dropna()
    if per.empty or 1.0 not in per.columns:
        return pd.DataFrame()
    table = per if by_cell else per.groupby(level="encoder").mean()
    depths = np.asarray(table.columns, dtype=float)
    values = table.to_numpy()
    best = np.argmax(values, axis=1)
    out = table.reset_index()
    out.columns = [*out.columns[: table.index.nlevels], *[f"auroc_depth_{d:g}" for d in depths]]
    out["best_depth"] = depths[best]
    out["gain_over_last"] = values[np.arange(len(values)), best] - table[1.0].to_numpy()
    return out
