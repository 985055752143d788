"""The analyses past the paper's section 10 that ``crsbench analyze`` runs: pretraining-overlap
flags and the shift analyses without them, the CRS weight sweep and the Pareto front, and the
per-dataset verdict table."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from crsbench.scoring.anchors import Anchors
from crsbench.stats.contamination import (
    contamination_flags,
    shift_validity_without_flagged,
    shift_welch_without_flagged,
)
from crsbench.stats.verdict import AxisReplicates, seed_axis_replicates, verdict_table
from crsbench.stats.weight_sensitivity import pareto_front, weight_sensitivity
from crsbench.store.plan import StoredPlan

Emit = Callable[..., None]


def _flags_headline(flags: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    hit = flags[flags["flagged"]]
    return flags, {"catalogue_version": flags["catalogue_version"].iloc[0],
                   "flagged_cells": [f"{e}/{d} ({lv})" for e, d, lv in
                                     zip(hit["encoder"], hit["dataset"], hit["level"],
                                         strict=True)]}  # fmt: skip


def _verdict_headline(table: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    picks = table[table["question"] == "pick"]
    return table, {
        "interval": sorted(set(table["interval"])),
        "pick": {d: (lead if dist else f"{lead} (not distinguishable from {ru})")
                 for d, lead, ru, dist in zip(picks["dataset"], picks["leader"],
                                              picks["runner_up"], picks["distinguishable"],
                                              strict=True)},
    }  # fmt: skip


def emit_beyond(
    emit: Emit,
    runs: pd.DataFrame,
    cells: pd.DataFrame,
    board: pd.DataFrame,
    per_seed: pd.DataFrame,
    anchors: Anchors,
    groups: dict[str, str] | None,
    n_replicates: int,
    seed: int,
    test_set_axes: AxisReplicates | None = None,
    plan: StoredPlan | None = None,
) -> None:
    """Emit ``contamination_flags``, ``shift_welch_without_flagged``,
    ``external_validity_shift_without_flagged``, ``weight_sensitivity``, ``pareto_front``
    and ``verdict`` through :func:`crsbench.stats.run_analyses`'s ``emit``. The verdict's
    intervals come from ``test_set_axes`` (the test-patient × seed bootstrap's per-cell axes)
    when given, else from the paired-seed bootstrap (named ``seed-only`` on every row).
    ``plan`` (the store's recorded plan) is what each cell of the validity CRS must hold."""
    emit("contamination_flags", lambda: _flags_headline(contamination_flags(cells)))
    emit("shift_welch_without_flagged", lambda: shift_welch_without_flagged(runs, groups),
         "the store has no institutional-shift rows (condition = shift)")  # fmt: skip
    emit("external_validity_shift_without_flagged",
         lambda: shift_validity_without_flagged(runs, anchors, plan=plan),
         "the store has no institutional-shift rows (condition = shift)")  # fmt: skip
    emit("weight_sensitivity", lambda: weight_sensitivity(board, anchors, seed=seed))
    emit("pareto_front", lambda: pareto_front(board, anchors))

    def verdict() -> tuple[pd.DataFrame, dict]:
        reps = test_set_axes
        if reps is None:
            reps = seed_axis_replicates(per_seed, n_replicates=n_replicates, seed=seed)
        return _verdict_headline(verdict_table(runs, reps, anchors, seed=seed))

    emit("verdict", verdict)
