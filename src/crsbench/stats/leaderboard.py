"""A leaderboard's computation: per encoder the four axes, CRS and components, AUROC, both
ranks and the bootstrap tier (written by :mod:`crsbench.report.leaderboard_files`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from crsbench.protocol import FROZEN
from crsbench.scoring.aggregate import aggregate_by_encoder, score_cells
from crsbench.scoring.anchors import Anchors, anchors_for_runs
from crsbench.scoring.planned import (
    add_unrun_cells,
    incomplete_sentences,
    plan_notes,
    planned_axes,
    ranked_per_seed,
    store_planned_cells,
)
from crsbench.store.computed import ComputedTables

LEADERBOARD_COLUMNS: tuple[str, ...] = (
    "rank_crs", "encoder", "n_cells", "n_cells_scored", "auroc", "ece", "retention",
    "robustness_drop", "robustness_drop_extra", "robustness_drop_with_extra",
    "robustness_drop_all_shifts",
    "P", "I", "W", "CRS", "crs_ci_low", "crs_ci_high", "crs_corrected", "interval",
    "rank_auroc", "tier", "p_rank1", "p_top3", "rule", "anchors_version",
    "pretraining_overlap", "missing",
)  # fmt: skip


def build_leaderboard(
    runs: pd.DataFrame,
    anchors: str | Anchors | None = None,
    rule: str = "fixed",
    n_replicates: int = 2_000,
    seed: int = 0,
    regime: str = FROZEN,
    *,
    store: str | Path | None = None,
    interval: str = "test-patients",
    n_jobs: int | None = None,
    stored: ComputedTables | None = None,
) -> pd.DataFrame:
    """Leaderboard of the main protocol of ``regime`` (one row per encoder, best CRS first).

    ``crs_ci_low``/``crs_ci_high`` (95 %), ``crs_corrected`` (the bias-corrected estimate
    ``2·CRS − mean(CRS*)`` the basic interval implies; NaN for seed-only), ``tier`` and the
    probabilities come from
    :func:`crsbench.stats.uncertainty.crs_uncertainty` with ``n_replicates`` replicates
    (``0`` skips the bootstrap: all NaN): by default the paired bootstrap over test patients
    × seeds on ``store``'s per-sample predictions, ``interval="seed-only"`` the paper's
    seed-only bootstrap; ``interval`` names the method used. ``board.attrs`` holds
    ``interval_note`` (why it fell back to seed-only, else empty), ``n_patients`` (test
    patients per dataset), ``indistinguishable`` (one sentence per tier of several
    encoders), ``incomplete`` (one sentence per incomplete encoder) and ``plan_notes`` (the
    store records no plan: what the fallback is, else empty). What each cell must
    hold comes from ``store``'s recorded plan (:func:`crsbench.scoring.planned.planned_axes`).
    An encoder with a cell that cannot be scored (or was planned and not run) keeps its row,
    with NaN CRS, no rank, no tier, no P(rank 1) / P(top 3), and the reason in ``missing``; it
    is left out of the bootstrap, so it takes no part in the other encoders' probabilities.
    The extras' robustness is beside R. ``stored``: the store's stored analyses for the same
    replicates, seed, anchors and interval (:func:`crsbench.stats.compute.stored_analyses`);
    their ``bootstrap`` gives the intervals, tiers and probabilities instead of computing
    them again (the fixed rule and the frozen regime only: the analyses' own).
    ``pretraining_overlap`` names the encoder's cells and shift targets that its pretraining
    data may include (:func:`crsbench.stats.contamination.pretraining_overlap`).
    """
    from crsbench.stats.contamination import pretraining_overlap
    from crsbench.stats.shift import shift_auroc_by_encoder
    from crsbench.stats.uncertainty import (
        check_interval,
        crs_uncertainty,
        indistinguishable_sentences,
    )

    check_interval(interval)
    anchors = anchors_for_runs(anchors, runs)  # default: what the store's runs recorded
    per_seed = planned_axes(runs, store, regime)  # what each cell must hold: the plan's
    cells = score_cells(per_seed, anchors, rule=rule)
    if store is not None and regime == FROZEN:  # a store without a recorded plan
        cells = add_unrun_cells(cells, store_planned_cells(store))
    ranked = ranked_per_seed(per_seed, cells)  # incomplete encoders take no part
    board = aggregate_by_encoder(cells)
    flags = pretraining_overlap(cells, shift_auroc_by_encoder(runs, regime))
    board["pretraining_overlap"] = board["encoder"].map(flags).fillna("")
    for col in ("crs_ci_low", "crs_ci_high", "crs_corrected", "tier", "p_rank1", "p_top3"):
        board[col] = np.nan
    board["interval"] = ""
    board.attrs.update(interval_note="", n_patients={}, indistinguishable=[],
                       incomplete=incomplete_sentences(cells),
                       plan_notes=plan_notes(store))  # fmt: skip
    if n_replicates > 0 and len(board) > 1 and not ranked.empty:
        if stored is not None and rule == "fixed" and regime == FROZEN:
            ranks, head = _stored_bootstrap(stored)
        else:
            unc = crs_uncertainty(ranked, anchors, store=store, interval=interval, rule=rule,
                                  n_replicates=n_replicates, seed=seed, n_jobs=n_jobs)  # fmt: skip
            ranks = unc.result.ranks
            head = {"interval": unc.method, "note": unc.note, "n_test_patients": unc.n_patients,
                    "indistinguishable": indistinguishable_sentences(unc)}  # fmt: skip
        info = ranks.set_index("encoder")
        for col in ("crs_ci_low", "crs_ci_high", "crs_corrected", "tier", "p_rank1", "p_top3"):
            board[col] = board["encoder"].map(info[col]) if col in info else np.nan
        board["interval"] = np.where(board["tier"].notna(), head["interval"], "")
        board.attrs.update(interval_note=head["note"], n_patients=head["n_test_patients"],
                           indistinguishable=list(head["indistinguishable"]))  # fmt: skip
    return board[list(LEADERBOARD_COLUMNS)]


def _stored_bootstrap(stored: ComputedTables) -> tuple[pd.DataFrame, dict]:
    """The stored bootstrap's ranks and headline (a skipped bootstrap fails with its reason)."""
    from crsbench.core.errors import DataError

    if "bootstrap" not in stored.tables:
        why = stored.summary["skipped"].get("bootstrap", "not computed")
        raise DataError(f"the stored analyses have no bootstrap: {why}")
    return stored.tables["bootstrap"], stored.summary["analyses"]["bootstrap"]
