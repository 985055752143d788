"""Cells the store's config planned but the store does not hold: never a complete-looking row.

An interrupted run, a ``--skip-missing`` run or a deleted cell leaves an encoder with fewer
cells than its config planned. Averaging its CRS over the cells that happen to be there would
rank it as if it were complete, so each planned-but-absent cell enters the cell table as a row
with NaN axes and CRS and the note ``cell not run``: the encoder's aggregate is then NaN with
the reason, like any other missing value (``docs/protocol.md`` §7).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from crsbench.core.errors import StoreError
from crsbench.store.reader import read_meta

NOT_RUN = "cell not run (planned by the config, absent from the store)"


def planned_cells(config_json: str) -> set[tuple[str, str]] | None:
    """``(encoder, dataset)`` frozen cells of a stored config (``None`` if not readable).

    Probe datasets are the config's datasets that are not only shift targets; cells listed
    under ``exclude_cells`` are not planned.
    """
    try:
        cfg = json.loads(config_json or "{}")
        encoders = [e["name"] if isinstance(e, dict) else str(e) for e in cfg["encoders"]]
        datasets = list(cfg["datasets"])
    except (ValueError, KeyError, TypeError):
        return None
    shifts = cfg.get("shifts") or []
    sources = {s.get("source") for s in shifts}
    targets = {s.get("target") for s in shifts} - sources
    excluded = {(c.get("encoder"), c.get("dataset")) for c in cfg.get("exclude_cells") or []}
    return {
        (e, d) for e in encoders for d in datasets if d not in targets and (e, d) not in excluded
    }


def store_planned_cells(store: str | Path) -> set[tuple[str, str]] | None:
    """:func:`planned_cells` of the config recorded in ``store``'s ``meta`` table."""
    try:
        meta = read_meta(store)
    except StoreError:
        return None
    if not meta:
        return None
    return planned_cells(str(meta["config_json"]))


def add_unrun_cells(cells: pd.DataFrame, planned: set[tuple[str, str]] | None) -> pd.DataFrame:
    """``cells`` plus one NaN row (``missing`` = :data:`NOT_RUN`) per planned, absent cell."""
    if not planned or cells.empty:
        return cells
    present = set(zip(cells["encoder"], cells["dataset"], strict=True))
    absent = sorted(planned - present)
    if not absent:
        return cells
    rows = pd.DataFrame([{"encoder": e, "dataset": d} for e, d in absent])
    for col in cells.columns:
        if col not in rows:
            rows[col] = np.nan if cells[col].dtype.kind in "fiu" else None
    rows["missing"] = NOT_RUN
    keep = [c for c in ("rule", "anchors_version") if c in cells]
    for col in keep:
        rows[col] = cells[col].iloc[0]
    return pd.concat([cells, rows[cells.columns]], ignore_index=True)
