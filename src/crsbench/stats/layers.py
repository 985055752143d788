"""Layer-depth sweep: best depth per encoder and its gain over the last block."""

from __future__ import annotations

import numpy as np
import pandas as pd

from crsbench.store.reader import select_runs


def layer_depth(runs: pd.DataFrame, regime: str = "frozen", by_cell: bool = False) -> pd.DataFrame:
    """Per encoder (or per cell): seed-mean clean full-label AUROC at each depth, the best
    depth, and ``gain_over_last`` = AUROC at the best depth − AUROC at depth 1.0.

    A cell lacking a depth (or with a NaN seed at one) is not averaged over the depths it
    has: it is left out, and a per-encoder row counts its cells in ``n_cells`` and the left-out
    ones in ``n_cells_incomplete`` (an encoder with none complete is left out).
    """
    rows = select_runs(runs, regime=regime, layer=None)
    per = rows.groupby(["encoder", "dataset", "layer"])["auroc"].mean(skipna=False)
    per = per.unstack("layer")
    if per.empty or 1.0 not in per.columns:
        return pd.DataFrame()
    whole = per.notna().all(axis=1)
    counts = whole.groupby(level="encoder").agg(["size", "sum"])
    per = per[whole]
    if per.empty:
        return pd.DataFrame()
    table = per if by_cell else per.groupby(level="encoder").mean()
    depths = np.asarray(table.columns, dtype=float)
    values = table.to_numpy()
    best = np.argmax(values, axis=1)
    out = table.reset_index()
    out.columns = [*out.columns[: table.index.nlevels], *[f"auroc_depth_{d:g}" for d in depths]]
    out["best_depth"] = depths[best]
    out["gain_over_last"] = values[np.arange(len(values)), best] - table[1.0].to_numpy()
    if not by_cell:
        out["n_cells"] = out["encoder"].map(counts["size"]).astype(int)
        out["n_cells_incomplete"] = out["n_cells"] - out["encoder"].map(counts["sum"]).astype(int)
    return out
