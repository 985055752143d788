"""The analyses past the paper's section 10 that ``crsbench analyze`` runs
(:data:`BEYOND_ANALYSES`): pretraining-overlap flags and the shift analyses without them, the
CRS weight sweep and the Pareto front, and the per-dataset at-a-glance table."""

from __future__ import annotations

import pandas as pd

from crsbench.core.errors import ConfigError
from crsbench.stats.analysis_registry import Analysis, AnalysisInputs
from crsbench.stats.at_a_glance import at_a_glance_table, seed_axis_replicates
from crsbench.stats.contamination import (
    contamination_flags,
    shift_validity_without_flagged,
    shift_welch_without_flagged,
)
from crsbench.stats.weight_sensitivity import pareto_front, weight_sensitivity

#: Why the at-a-glance table is skipped with ``--replicates 0``.
NO_INTERVALS = "intervals need --replicates ≥ 1; the leaders are in the tables"
_NO_SHIFT = "the store has no institutional-shift rows (condition = shift)"


def _flags_headline(flags: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    hit = flags[flags["flagged"]]
    return flags, {"catalogue_version": flags["catalogue_version"].iloc[0],
                   "flagged_cells": [f"{e}/{d} ({lv})" for e, d, lv in
                                     zip(hit["encoder"], hit["dataset"], hit["level"],
                                         strict=True)]}  # fmt: skip


def _at_a_glance_headline(table: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    picks = table[table["question"] == "pick"]
    return table, {
        "interval": sorted(set(table["interval"])),
        "pick": {d: (lead if dist else f"{lead} (not distinguishable from {ru})")
                 for d, lead, ru, dist in zip(picks["dataset"], picks["leader"],
                                              picks["runner_up"], picks["distinguishable"],
                                              strict=True)},
    }  # fmt: skip


def at_a_glance(x: AnalysisInputs) -> tuple[pd.DataFrame, dict]:
    """The per-dataset at-a-glance table. Its intervals come from the test-patient × seed bootstrap's
    per-cell axes when ``bootstrap`` ran, else from the paired-seed bootstrap (named
    ``seed-only`` on every row)."""
    if x.n_replicates < 1:
        raise ConfigError(NO_INTERVALS)
    reps = x.test_set_axes
    if reps is None:
        reps = seed_axis_replicates(x.per_seed, n_replicates=x.n_replicates, seed=x.seed)
    table = at_a_glance_table(x.runs, reps, x.anchors, seed=x.seed)
    return (table, {}) if table.empty else _at_a_glance_headline(table)


BEYOND_ANALYSES: tuple[Analysis, ...] = (
    Analysis(
        "contamination_flags", ("cells",), lambda x: _flags_headline(contamination_flags(x.cells))
    ),
    Analysis(
        "shift_welch_without_flagged",
        ("runs", "groups"),
        lambda x: shift_welch_without_flagged(x.runs, x.groups),
        _NO_SHIFT,
    ),
    Analysis(
        "external_validity_shift_without_flagged",
        ("runs", "anchors", "plan"),
        lambda x: shift_validity_without_flagged(x.runs, x.anchors, plan=x.plan),
        _NO_SHIFT,
    ),
    Analysis(
        "weight_sensitivity",
        ("board", "anchors", "seed"),
        lambda x: weight_sensitivity(x.board, x.anchors, seed=x.seed),
    ),
    Analysis("pareto_front", ("board", "anchors"), lambda x: pareto_front(x.board, x.anchors)),
    Analysis(
        "at_a_glance",
        ("runs", "per_seed", "test_set_axes", "anchors", "n_replicates", "seed"),
        at_a_glance,
    ),
)
