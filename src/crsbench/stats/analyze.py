"""Run every analysis of docs/protocol.md section 10 that a store has data for.

Each analysis writes one CSV; ``summary.json`` gathers the headline figures, the anchors
version, and a note for every analysis that was skipped (and why).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from crsbench.core.diskio import make_folder, write_csv_atomic, write_text_atomic
from crsbench.core.errors import CrsbenchError, DataError
from crsbench.protocol import BOOTSTRAP_REPLICATES
from crsbench.scoring.aggregate import aggregate_by_encoder, encoder_means, score_cells
from crsbench.scoring.anchors import anchors_for_runs
from crsbench.scoring.planned import (
    add_unrun_cells,
    incomplete_sentences,
    plan_notes,
    planned_axes,
    ranked_per_seed,
    store_plan,
    store_planned_cells,
)
from crsbench.stats.agreement import rank_agreement, rank_moves
from crsbench.stats.analyze_beyond import emit_beyond
from crsbench.stats.analyze_predictions import emit_prediction_analyses
from crsbench.stats.calibration_effects import (
    discrimination_calibration_correlation,
    ece_increase_by_condition,
    recalibration_effect,
)
from crsbench.stats.contamination import pretraining_overlap
from crsbench.stats.control_probes import agreement_headline, control_probe_agreement
from crsbench.stats.insertion import insertion_experiment, insertion_summary
from crsbench.stats.label_efficiency import (
    label_efficiency_cells,
    label_efficiency_correlations,
)
from crsbench.stats.layers import layer_depth
from crsbench.stats.regimes import regime_comparison
from crsbench.stats.shift import (
    default_groups,
    shift_auroc_by_encoder,
    shift_drop_matrix,
    shift_welch_by_target,
)
from crsbench.stats.uncertainty import crs_uncertainty, indistinguishable_sentences
from crsbench.stats.validity import leave_one_dataset_out, leave_one_target_out, shift_validity
from crsbench.stats.verdict import axis_replicates_of


def _jsonable(value: object) -> object:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.bool_ | bool):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value) if np.isfinite(value) else None
    return value


def _records(df: pd.DataFrame) -> list[dict]:
    return [_jsonable(r) for r in df.to_dict(orient="records")]


def run_analyses(
    runs: pd.DataFrame,
    out_dir: str | Path,
    n_replicates: int = BOOTSTRAP_REPLICATES,
    seed: int = 0,
    anchors: str | Path | None = None,
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
    out = Path(out_dir)
    if runs.empty:
        raise DataError("the store has no run records: run `crsbench run` first.")
    anc = anchors_for_runs(anchors, runs)  # default: what the store's runs recorded
    summary: dict = {"anchors_version": anc.version, "analyses": {}, "skipped": {},
                     "notes": plan_notes(store)}  # fmt: skip
    plan = store_plan(store)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        per_seed = planned_axes(runs, plan)  # what each cell must hold: the store's plan
        cells = score_cells(per_seed, anc)
    if store is not None:  # a store without a recorded plan: the cells of its config
        cells = add_unrun_cells(cells, store_planned_cells(store))
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
    make_folder(out)

    def emit(
        name: str,
        fn: Callable[[], pd.DataFrame | tuple[pd.DataFrame, dict]],
        why_empty: str = "the store has no rows for this analysis",
    ) -> None:
        try:
            result = fn()
        except CrsbenchError as exc:  # a documented reason (too few encoders, no target, ...)
            summary["skipped"][name] = str(exc)  # anything else (a bug) fails the command
            return
        table, headline = result if isinstance(result, tuple) else (result, None)
        if table is None or table.empty:
            summary["skipped"][name] = why_empty
            return
        write_csv_atomic(table, out / f"{name}.csv", index=False)
        summary["analyses"][name] = _jsonable(headline) if headline else _records(table)[:20]

    emit("cells", lambda: (cells, {"n_cells": len(cells), "n_encoders": len(board)}))
    emit("leaderboard", lambda: (board, {"leader": board["encoder"].iloc[0]}))

    def agreement() -> tuple[pd.DataFrame, dict]:
        auc, crs = encoder_means(cells, "auroc"), encoder_means(cells, "CRS")
        stats = rank_agreement(auc, crs)
        write_csv_atomic(rank_moves(auc, crs, names=("auroc", "crs")), out / "rank_moves.csv",
                         index=False)  # fmt: skip
        return pd.DataFrame([stats]), stats

    emit("agreement_auroc_vs_crs", agreement)

    test_set_axes: list = []  # the bootstrap's per-cell axes, reused by the verdict

    def bootstrap() -> tuple[pd.DataFrame, dict]:
        unc = crs_uncertainty(ranked_per_seed(per_seed, cells), anc, store=store,
                              interval=interval,
                              n_replicates=n_replicates, seed=seed, n_jobs=n_jobs)  # fmt: skip
        test_set_axes.append(axis_replicates_of(unc))
        ranks = unc.ranks()
        write_csv_atomic(unc.result.pairwise.assign(interval=unc.method),
                         out / "bootstrap_pairwise.csv", index=False)  # fmt: skip
        top = ranks.iloc[:3]
        return ranks, {
            "n_replicates": n_replicates,
            "quick_look": n_replicates < BOOTSTRAP_REPLICATES,
            "interval": unc.method,
            "note": unc.note,
            "n_test_patients": unc.n_patients,
            "p_rank1": dict(zip(top["encoder"], top["p_rank1"], strict=True)),
            "leading_tier": ranks.loc[ranks["tier"] == 1, "encoder"].tolist(),
            "indistinguishable": indistinguishable_sentences(unc),
        }

    emit("bootstrap", bootstrap)

    def insertion() -> tuple[pd.DataFrame, dict]:
        trials = insertion_experiment(cells, anc, seed=seed)
        write_csv_atomic(trials, out / "insertion_trials.csv", index=False)
        summ = insertion_summary(trials)
        return summ, {"by_rule": _records(summ), "source": trials["source"].iloc[0]}

    emit("insertion", insertion)
    emit("recalibration", lambda: recalibration_effect(runs, seed=seed))
    emit("calibration_under_perturbation", lambda: ece_increase_by_condition(runs))
    emit("discrimination_vs_calibration_loss", lambda: discrimination_calibration_correlation(runs))

    def shift() -> tuple[pd.DataFrame, dict]:
        per_enc = shift_auroc_by_encoder(runs)
        if per_enc.empty:
            return per_enc, {}
        write_csv_atomic(per_enc, out / "shift_auroc.csv", index=False)
        write_csv_atomic(shift_drop_matrix(per_enc), out / "shift_drop.csv")
        encoders = sorted(per_enc["encoder"].unique())
        grp = groups if groups is not None else default_groups(encoders, runs)
        # one test per (source, target): the paper's CheXpert -> MIMIC-CXR row first, extra
        # targets each on their own row, never pooled
        table = shift_welch_by_target(per_enc, grp)
        return table, {f"{r['source']}->{r['target']}": r for r in _records(table)}

    emit("shift_welch", shift)
    emit("label_efficiency_cells", lambda: label_efficiency_cells(runs, cells))
    emit("label_efficiency_correlations", lambda: label_efficiency_correlations(cells))
    emit("external_validity_shift", lambda: shift_validity(runs, anc, plan=plan))
    emit("leave_one_dataset_out", lambda: leave_one_dataset_out(cells))
    emit("leave_one_target_out", lambda: leave_one_target_out(runs, anc, plan=plan))
    emit(
        "regime_comparison",
        lambda: regime_comparison(runs, anc, plan=plan),
        "no 'lora' regime rows in the store (frozen vs adapted needs both)",
    )
    emit("layer_depth", lambda: layer_depth(runs), "no layer-depth sweep rows in the store")

    def control_probes() -> tuple[pd.DataFrame, dict]:
        table, coverage = control_probe_agreement(runs, anc, plan=plan)
        if not coverage.empty:
            write_csv_atomic(coverage, out / "control_probe_coverage.csv", index=False)
        return table, agreement_headline(table, coverage)

    emit(
        "control_probe_agreement",
        control_probes,
        "no control-probe rows in the store (probe other than logistic)",
    )
    given = test_set_axes[0] if test_set_axes else None
    emit_beyond(emit, runs, cells, board, per_seed, anc, groups, n_replicates, seed, given,
                plan=plan)  # fmt: skip
    emit_prediction_analyses(emit, out, store, cells, per_seed, n_replicates, seed, anc)
    write_text_atomic(out / "summary.json", json.dumps(_jsonable(summary), indent=2))
    return summary
