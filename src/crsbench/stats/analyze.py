"""Run every analysis of docs/protocol.md section 10 that a store has data for.

:func:`compute_analyses` scores the store once and evaluates the registry
(:data:`ANALYSES`, :mod:`crsbench.stats.analysis_registry`) on it: one table per analysis
(and the tables beside some of them) and a summary with the headline figures, the anchors
version, and a note for every analysis that was skipped (and why).
:func:`write_analyses` writes them as ``<name>.csv`` and ``summary.json``;
:func:`run_analyses` does both.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from crsbench.core.diskio import make_folder, write_csv_atomic, write_text_atomic
from crsbench.core.errors import DataError
from crsbench.protocol import BOOTSTRAP_REPLICATES
from crsbench.scoring.aggregate import aggregate_by_encoder, score_cells
from crsbench.scoring.anchors import anchors_for_runs
from crsbench.scoring.planned import (
    add_unrun_cells,
    incomplete_sentences,
    plan_notes,
    planned_axes,
    store_plan,
    store_planned_cells,
)
from crsbench.stats.analysis_registry import AnalysisInputs, evaluate, jsonable
from crsbench.stats.analyze_beyond import BEYOND_ANALYSES
from crsbench.stats.analyze_paper import PAPER_ANALYSES
from crsbench.stats.analyze_predictions import PREDICTION_ANALYSES
from crsbench.stats.contamination import pretraining_overlap
from crsbench.stats.report_tables import PREFIX, REPORT_KEY, report_tables
from crsbench.stats.shift import shift_auroc_by_encoder
from crsbench.store.computed import ComputedTables

#: Every analysis ``crsbench analyze`` runs, in order (the bootstrap before the verdict,
#: which reuses its per-cell axes).
ANALYSES = PAPER_ANALYSES + BEYOND_ANALYSES + PREDICTION_ANALYSES
#: Tables written with their index (the others without).
INDEXED_TABLES: frozenset[str] = frozenset({"shift_drop"})


def _inputs(runs: pd.DataFrame, anchors, store, summary: dict, **params) -> AnalysisInputs:
    """Score the store once: per-seed axes, cells and the board (the analyses' inputs)."""
    anc = anchors_for_runs(anchors, runs)  # default: what the store's runs recorded
    plan = store_plan(store)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        per_seed = planned_axes(runs, plan)  # what each cell must hold: the store's plan
        cells = score_cells(per_seed, anc)
    if store is not None:  # a store without a recorded plan: the cells of its config
        cells = add_unrun_cells(cells, store_planned_cells(store))
    summary["anchors_version"] = anc.version
    summary["incomplete_encoders"] = incomplete_sentences(cells)
    summary["cells_left_out"] = [str(w.message) for w in caught]
    summary["cells_not_scored"] = {f"{e}/{d}": m for e, d, m, c in zip(
        cells["encoder"], cells["dataset"], cells["missing"], cells["CRS"], strict=True)
        if not np.isfinite(c)}  # fmt: skip
    board = aggregate_by_encoder(cells)
    if board.empty:
        raise DataError(
            "the store has no complete main-protocol cell (frozen, logistic, last layer, every "
            "fraction and condition): nothing to analyse. `crsbench status` shows what is left."
        )
    board["pretraining_overlap"] = board["encoder"].map(
        pretraining_overlap(cells, shift_auroc_by_encoder(runs))).fillna("")  # fmt: skip
    return AnalysisInputs(runs=runs, cells=cells, board=board, per_seed=per_seed, anchors=anc,
                          plan=plan, store=None if store is None else Path(store),
                          **params)  # fmt: skip


def compute_analyses(
    runs: pd.DataFrame,
    n_replicates: int = BOOTSTRAP_REPLICATES,
    seed: int = 0,
    anchors=None,
    groups: dict[str, str] | None = None,
    *,
    store: str | Path | None = None,
    interval: str = "test-patients",
    n_jobs: int | None = None,
) -> ComputedTables:
    """Score ``runs`` once and evaluate every analysis of :data:`ANALYSES` on them.

    Parameters are those of :func:`run_analyses`. ``n_replicates=0`` skips the bootstrap
    (and the verdict's intervals) with that reason.

    Returns
    -------
    ComputedTables
        Every table (name → frame, in order) and the summary (JSON-able).

    Raises
    ------
    DataError
        The store has no run records, or no complete main-protocol cell.
    """
    if runs.empty:
        raise DataError("the store has no run records: run `crsbench run` first.")
    summary: dict = {"anchors_version": "", "analyses": {}, "skipped": {},
                     "notes": plan_notes(store)}  # fmt: skip
    inputs = _inputs(runs, anchors, store, summary, groups=groups, n_replicates=n_replicates,
                     seed=seed, interval=interval, n_jobs=n_jobs)  # fmt: skip
    tables = evaluate(ANALYSES, inputs, summary)
    tables.update(report_tables(inputs, tables, summary))  # what the report shows beside them
    return ComputedTables(tables, jsonable(summary))  # type: ignore[arg-type]


def write_analyses(computed: ComputedTables, out_dir: str | Path) -> Path:
    """Write every analysis's table as ``<name>.csv`` and the summary as ``summary.json``
    under ``out_dir`` (created); the path of ``summary.json``. The report's own tables and
    facts (:mod:`crsbench.stats.report_tables`) stay in the store."""
    out = make_folder(out_dir)
    for name, table in computed.tables.items():
        if not name.startswith(PREFIX):
            write_csv_atomic(table, out / f"{name}.csv", index=name in INDEXED_TABLES)
    summary = {k: v for k, v in computed.summary.items() if k != REPORT_KEY}
    return write_text_atomic(out / "summary.json", json.dumps(summary, indent=2))


def run_analyses(
    runs: pd.DataFrame,
    out_dir: str | Path,
    n_replicates: int = BOOTSTRAP_REPLICATES,
    seed: int = 0,
    anchors=None,
    groups: dict[str, str] | None = None,
    *,
    store: str | Path | None = None,
    interval: str = "test-patients",
    n_jobs: int | None = None,
) -> dict:
    """Run every analysis, write ``<name>.csv`` per analysis and ``summary.json``.

    Parameters
    ----------
    runs : pandas.DataFrame
        A store's ``runs`` table.
    out_dir : path
        Output directory (created).
    n_replicates : int
        Bootstrap replicates (default the protocol's 10,000; fewer is a quick look, flagged
        ``quick_look`` in the bootstrap's summary).
    seed : int
        Seed of every resampling.
    anchors : anchors source, optional
        Default: the version the store's runs recorded (the config's ``anchors``), else the
        shipped current version (:func:`crsbench.scoring.anchors.anchors_for_runs`).
    groups : mapping, optional
        Encoder → ``general`` / ``medical`` for the shift test (default: encoder cards, then
        the ``encoder_group`` column).
    store, interval
        The bootstrap of tiers and intervals (:func:`crsbench.stats.uncertainty.crs_uncertainty`):
        test patients × seeds on ``store``'s predictions by default, ``"seed-only"`` by name.
    n_jobs : int or None
        Worker processes of the test-set bootstrap (``None``: every available core when the
        work repays it; :func:`crsbench.stats.cell_pool.pool_size`). Results do not depend on it.

    Returns
    -------
    dict
        The summary (also written as ``summary.json``).
    """
    computed = compute_analyses(runs, n_replicates, seed, anchors, groups, store=store,
                                interval=interval, n_jobs=n_jobs)  # fmt: skip
    write_analyses(computed, out_dir)
    return {k: v for k, v in computed.summary.items() if k != REPORT_KEY}
