"""What the store's config planned: the axes of every planned cell, and who can be ranked.

An interrupted run, a ``--skip-missing`` run or a deleted cell leaves an encoder with fewer
cells than its config planned; a run may also lack a planned seed or shift target in every
cell. What each cell must hold comes from the plan the store records
(:func:`crsbench.store.read_plan`: the frozen grid's cells and the LoRA regime's), never from
what the store holds: :func:`planned_axes`, the one way every scoring path reads per-seed
axes, holds the runs to it, so a planned-but-absent cell is a row of NaN axes noted
:data:`NOT_RUN` and a missing seed or shift target is a NaN with its reason
(:mod:`crsbench.scoring.expected`).
A store written before the plan was recorded falls back to the cells of its stored config
(:func:`planned_cells`, :func:`add_unrun_cells`).

An encoder with any cell that is not scored is *incomplete*: no rank, no tier, no P(rank 1)
/ P(top 3), and it takes no part in the other encoders' probabilities
(:func:`ranked_per_seed`, :func:`incomplete_sentences`; ``docs/protocol.md`` §7).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from crsbench.core.errors import StoreError
from crsbench.protocol import FROZEN
from crsbench.scoring.axes import axes_from_runs
from crsbench.scoring.seed_axes import NOT_RUN
from crsbench.store.reader import read_meta, read_plan
from crsbench.store.stored_plan import NO_PLAN_NOTE, StoredPlan

__all__ = [
    "NOT_RUN",
    "NO_PLAN_NOTE",
    "add_unrun_cells",
    "incomplete_encoders",
    "incomplete_sentences",
    "planned_axes",
    "plan_notes",
    "plan_of",
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


#: Where :func:`planned_axes` finds the plan: the plan itself, a store directory, or nothing.
PlanSource = StoredPlan | str | Path | None


def plan_of(source: PlanSource, regime: str = FROZEN) -> StoredPlan | None:
    """The planned cells of ``regime`` in ``source`` (a plan, or a store's recorded one);
    ``None`` when there is none (no plan, or no cell of ``regime`` planned)."""
    plan = source if isinstance(source, StoredPlan) else store_plan(source)
    return None if plan is None else plan.of_regime(regime)


def planned_axes(
    runs: pd.DataFrame,
    store: PlanSource = None,
    regime: str = FROZEN,
    *,
    include_shift: bool | Sequence[str] = True,
    probe: str = "logistic",
    robustness: str = "paper",
) -> pd.DataFrame:
    """:func:`~crsbench.scoring.axes_from_runs` of ``regime`` against the plan.

    The one way every scoring path (leaderboard, analyses, report, verdict, anchors freeze)
    reads per-seed axes: what each cell of ``regime`` must hold comes from ``store``'s
    recorded plan (a :class:`~crsbench.store.stored_plan.StoredPlan`, or a store directory), never
    from what the store holds. Without a plan of ``regime`` (a bare runs table, a store written
    before the plan was recorded) the store's rows decide (:data:`NO_PLAN_NOTE`).

    Parameters
    ----------
    runs : pandas.DataFrame
        The store's ``runs`` table.
    store : StoredPlan, path or None
        The plan, or the store that records it.
    regime, include_shift, probe, robustness
        As :func:`~crsbench.scoring.axes_from_runs` (a control probe is held to the frozen
        cells' plan: the planner fits it on the same seeds, conditions and shift targets).
    """
    return axes_from_runs(runs, regime=regime, include_shift=include_shift, probe=probe,
                          robustness=robustness, plan=plan_of(store, regime))  # fmt: skip


def plan_notes(store: str | Path | None) -> list[str]:
    """``[NO_PLAN_NOTE]`` for a readable store without a recorded plan, else ``[]``."""
    if store is None or store_plan(store) is not None:
        return []
    try:
        read_meta(store)
    except StoreError:
        return []
    return [NO_PLAN_NOTE]


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
        return plan.keys(FROZEN)
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
