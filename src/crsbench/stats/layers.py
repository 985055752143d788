"""Layer-depth sweep: the depth chosen on validation per encoder, and its test gain.

Each clean full-label logistic row records the validation macro-AUROC of its chosen C
(``details["val_auroc"]``). The best depth is the one with the highest seed-mean validation
AUROC, never the test AUROC: choosing on the test set would make its gain over the last block
non-negative by construction. ``gain_over_last`` is then the *test* AUROC at that depth minus
the test AUROC at depth 1.0, and it can be negative.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from crsbench.core.errors import DataError
from crsbench.protocol import FROZEN
from crsbench.store.reader import select_runs

#: Key of a row's ``details`` holding the validation macro-AUROC of the chosen C.
VAL_AUROC_KEY = "val_auroc"


def val_auroc(details: object) -> float:
    """The validation AUROC a row's ``details`` (JSON text or mapping) records, else NaN."""
    if isinstance(details, str):
        try:
            details = json.loads(details)
        except ValueError:
            return np.nan
    value = details.get(VAL_AUROC_KEY) if isinstance(details, dict) else None
    return np.nan if value is None else float(value)


def _per_depth(rows: pd.DataFrame, column: str) -> pd.DataFrame:
    """(encoder, dataset) × depth seed-mean of ``column`` (NaN when a seed is NaN)."""
    per = rows.groupby(["encoder", "dataset", "layer"])[column].mean(skipna=False)
    return per.unstack("layer")


def layer_depth(runs: pd.DataFrame, regime: str = FROZEN, by_cell: bool = False) -> pd.DataFrame:
    """Per encoder (or per cell): seed-mean clean full-label test AUROC at each depth
    (``auroc_depth_<d>``), the depth with the highest seed-mean validation AUROC
    (``best_depth``, its value ``best_val_auroc``), and ``gain_over_last`` = test AUROC at
    ``best_depth`` − test AUROC at depth 1.0 (negative when validation picked a depth that does
    worse on test).

    A cell lacking a depth, or a test or validation AUROC at one (a NaN seed included), is not
    averaged over the depths it has: it is left out, and a per-encoder row counts its cells in
    ``n_cells`` and the left-out ones in ``n_cells_incomplete`` (an encoder with none complete
    is left out).

    Raises
    ------
    DataError
        The store sweeps depths but records no validation AUROC (written before it was
        recorded): the best depth is not chosen on the test set instead.
    """
    rows = select_runs(runs, regime=regime, layer=None)
    if rows.empty or rows["layer"].nunique() < 2:
        return pd.DataFrame()
    rows = rows.assign(val_auroc=[val_auroc(d) for d in rows.get("details", [None] * len(rows))])
    if not np.isfinite(rows["val_auroc"].to_numpy(dtype=float)).any():
        raise DataError(
            "the layer-depth sweep chooses the best depth on validation AUROC, which this store "
            "does not record (written before it was): run the same config again with a new "
            "output directory to record it."
        )
    test, val = _per_depth(rows, "auroc"), _per_depth(rows, "val_auroc")
    if 1.0 not in test.columns:
        return pd.DataFrame()
    whole = test.notna().all(axis=1) & val.notna().all(axis=1)
    counts = whole.groupby(level="encoder").agg(["size", "sum"])
    test, val = test[whole], val[whole]
    if test.empty:
        return pd.DataFrame()
    if not by_cell:
        test, val = test.groupby(level="encoder").mean(), val.groupby(level="encoder").mean()
    return _table(test, val, counts, by_cell)


def _table(test: pd.DataFrame, val: pd.DataFrame, counts: pd.DataFrame,
           by_cell: bool) -> pd.DataFrame:  # fmt: skip
    """The output rows: test AUROC per depth, the depth chosen on validation, its test gain."""
    depths = np.asarray(test.columns, dtype=float)
    best = np.argmax(val.to_numpy(), axis=1)
    at = np.arange(len(best))
    out = test.reset_index()
    out.columns = [*out.columns[: test.index.nlevels], *[f"auroc_depth_{d:g}" for d in depths]]
    out["best_depth"] = depths[best]
    out["best_val_auroc"] = val.to_numpy()[at, best]
    out["gain_over_last"] = test.to_numpy()[at, best] - test[1.0].to_numpy()
    if not by_cell:
        out["n_cells"] = out["encoder"].map(counts["size"]).astype(int)
        out["n_cells_incomplete"] = out["n_cells"] - out["encoder"].map(counts["sum"]).astype(int)
    return out
