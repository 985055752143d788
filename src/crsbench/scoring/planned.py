"""What the store's config planned: the axes of every planned cell, and who can be ranked.

An interrupted run, a ``--skip-missing`` run or a deleted cell leaves an encoder with fewer
cells than its config planned; a run may also lack a planned seed or shift target in every
cell. What each cell must hold comes from the plan the store records
(:func:`crsbench.store.read_plan`), never from what the store holds: :func:`planned_axes`
reads it, so a planned-but-absent cell is a row of NaN axes noted :data:`NOT_RUN` and a
missing seed or shift target is a NaN with its reason (:mod:`crsbench.scoring.expected`).
A store written before the plan was recorded falls back to the cells of its stored config
(:func:`planned_cells`, :func:`add_unrun_cells`).

An encoder with any cell that is not scored is *incomplete*: no rank, no tier, no P(rank 1)
/ P(top 3), and it takes no part in the other encoders' probabilities
(:func:`ranked_per_seed`, :func:`incomplete_sentences`; ``docs/protocol.md`` §7).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from crsbench.core.errors import StoreError
from crsbench.scoring.axes import axes_from_runs
from crsbench.scoring.seed_axes import NOT_RUN
from crsbench.store.plan import StoredPlan
from crsbench.store.reader import read_meta, read_plan

__all__ = [
    "NOT_RUN",
    "add_unrun_cells",
    "incomplete_encoders",
    "incomplete_sentences",
    "planned_axes",
    "planned_cells",
    "ranked_per_seed",
    "store_plan",
    "store_planned_cells",
]


def store_plan(store: str | Path | None) -> StoredPlan | None:
    """The plan recorded in ``store`` (``None``: no store, an unreadable one, or one written
    before the plan was recorded)."""
    if store is None:
        return None
    try:
        return read_plan(store)
    except StoreError:
        return None


def planned_axes(
    runs: pd.DataFrame, store: str | Path | None = None, regime: str = "frozen"
) -> pd.DataFrame:
    """:func:`~crsbench.scoring.axes_from_runs` of ``regime`` with ``store``'s recorded plan
    (the plan is the frozen grid's: other regimes, or no plan, score what the store holds)."""
    plan = store_plan(store) if regime == "frozen" else None
    return axes_from_runs(runs, regime=regime, plan=plan)


def planned_cells(config_json: str) -> set[tuple[str, str]] | None:
    """``(encoder, dataset)`` frozen cells of a stored config (``None`` if not readable).

    Probe datasets are the config's datasets that are not only shift targets; cells listed
    under ``exclude_cells`` are not planned. The fallback for a store without a recorded plan.
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
    """The planned cells of ``store``: its recorded plan's, else :func:`planned_cells` of the
    config recorded in its ``meta`` table."""
    plan = store_plan(store)
    if plan is not None:
        return plan.keys()
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


def incomplete_encoders(cells: pd.DataFrame) -> dict[str, str]:
    """Encoder → why it is incomplete (each unscored cell with its ``missing`` note), for the
    encoders of the cell table ``cells`` with any cell whose CRS is NaN."""
    bad = cells[~np.isfinite(cells["CRS"].to_numpy(dtype=float))]
    out: dict[str, list[str]] = {}
    for enc, ds, note in zip(bad["encoder"], bad["dataset"], bad["missing"], strict=True):
        why = note if isinstance(note, str) and note else "CRS NaN"
        out.setdefault(str(enc), []).append(f"{ds}: {why}")
    return {e: "; ".join(parts) for e, parts in sorted(out.items())}


def ranked_per_seed(per_seed: pd.DataFrame, cells: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``per_seed`` of the encoders that can be ranked (every cell of ``cells``
    scored): what the bootstrap of tiers and P(rank 1) / P(top 3) resamples, so an
    incomplete encoder takes no part in anyone's probabilities."""
    incomplete = set(incomplete_encoders(cells))
    return per_seed[~per_seed["encoder"].isin(incomplete)].reset_index(drop=True)


def incomplete_sentences(cells: pd.DataFrame) -> list[str]:
    """One sentence per incomplete encoder: it has no rank, tier or probabilities, and why."""
    return [
        f"{enc} is incomplete (no rank, tier, P(rank 1) or P(top 3); it takes no part in the "
        f"other encoders' probabilities): {why}."
        for enc, why in incomplete_encoders(cells).items()
    ]
