"""Everything the report shows, from a results store and its stored analyses.

The report reads the runs through the store's read-only reader (:mod:`crsbench.store.reader`:
:func:`~crsbench.store.load_runs`, :func:`~crsbench.store.select_runs`) and the analyses that
``crsbench analyze`` stores (:func:`crsbench.stats.compute.stored_analyses`: computed and stored
first when absent or stale): the bootstrap, the verdict, the control probes, the prediction
analyses and the tables :func:`stored_or` names come from them; the scored board, the curves
and the reliability bins are computed here from the runs. It never imports the pipeline
(``crsbench.runs``, ``crsbench.features``, ``crsbench.encoders``). Each analysis that the store
has no data for is left as ``None`` with a one-line reason in :attr:`ReportData.missing`, which
the page shows instead of a figure.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from crsbench.core.errors import CrsbenchError, DataError, StoreError
from crsbench.protocol import BOOTSTRAP_REPLICATES
from crsbench.scoring.planned import (
    add_unrun_cells,
    incomplete_sentences,
    plan_notes,
    planned_axes,
    planned_cells,
    ranked_per_seed,
    store_plan,
)
from crsbench.store.computed import ComputedTables
from crsbench.store.files import STORE_FILE
from crsbench.store.plan import StoredPlan
from crsbench.store.reader import load_runs, read_meta, read_reliability, select_runs

#: Leaderboard columns shown and written, in order.
BOARD_COLUMNS: tuple[str, ...] = (
    "rank_crs", "rank_auroc", "encoder", "n_cells", "auroc", "ece", "retention",
    "robustness_drop", "robustness_drop_extra", "P", "I", "W", "CRS", "crs_ci_low",
    "crs_ci_high", "crs_corrected", "interval", "tier", "p_rank1", "p_top3",
    "pretraining_overlap", "missing",
)  # fmt: skip


@dataclass
class ReportData:
    """Tables behind every section of the report (``None`` = not available, see ``missing``)."""

    runs: pd.DataFrame
    board: pd.DataFrame
    cells: pd.DataFrame
    anchors_version: str
    n_replicates: int
    seed: int
    agreement: dict[str, float] | None = None
    rank_moves: pd.DataFrame | None = None
    bootstrap: pd.DataFrame | None = None
    leader_gap: dict[str, Any] | None = None
    recalibration: pd.DataFrame | None = None
    calibration_cell: tuple[str, str] | None = None
    cell_ece: pd.DataFrame | None = None
    reliability: pd.DataFrame | None = None
    label_curves: pd.DataFrame | None = None
    robustness: pd.DataFrame | None = None
    shift: pd.DataFrame | None = None
    shift_test: pd.DataFrame | None = None
    #: External validity leave-one-target-out (crsbench.stats.leave_one_target_out).
    shift_validity: pd.DataFrame | None = None
    depth_curves: pd.DataFrame | None = None
    control_agreement: pd.DataFrame | None = None
    control_coverage: pd.DataFrame | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    cells_left_out: list[str] = field(default_factory=list)
    #: ``encoder×dataset`` cells the config excluded (never run, never imputed).
    cells_excluded: list[str] = field(default_factory=list)
    #: One sentence per shift target: which rows were scored, images and patients.
    shift_rows: list[str] = field(default_factory=list)
    #: The loaded anchors the scores use.
    anchors: Any = None
    #: The requested bootstrap (``test-patients`` or ``seed-only``) and the store it reads.
    interval: str = "test-patients"
    store_dir: Path | None = None
    #: What each cell must hold: the store's recorded plan (``None``: written before it was),
    #: and the note saying so (:data:`crsbench.store.plan.NO_PLAN_NOTE`), shown on the page.
    plan: StoredPlan | None = None
    plan_notes: list[str] = field(default_factory=list)
    #: Worker processes of the test-set bootstrap (``None``: every available core).
    n_jobs: int | None = None
    #: The method the intervals came from, why it fell back (or ""), test patients per
    #: dataset, and one sentence per tier of encoders the test set cannot tell apart.
    interval_method: str = ""
    interval_note: str = ""
    n_patients: dict[str, int] = field(default_factory=dict)
    indistinguishable: list[str] = field(default_factory=list)
    #: The stored analyses the bootstrap, verdict, control-probe and prediction sections read.
    analyses: ComputedTables | None = None


def stored_or(data: ReportData, name: str, compute: Callable[[], pd.DataFrame]) -> pd.DataFrame:
    """The stored analysis ``name`` (a copy) when it is stored, else ``compute()``: the same
    function on the same inputs, so the table is the same either way; what was not stored (an
    empty table, or a reason to skip) is computed again and handled as before."""
    stored = None if data.analyses is None else data.analyses.tables.get(name)
    return stored.copy() if stored is not None else compute()


def _leader_gap(boot_ranks: pd.DataFrame, pairwise: pd.DataFrame) -> dict[str, Any] | None:
    if len(boot_ranks) < 2:
        return None
    lead, second = boot_ranks["encoder"].iloc[0], boot_ranks["encoder"].iloc[1]
    row = pairwise[(pairwise["encoder_a"] == lead) & (pairwise["encoder_b"] == second)]
    if row.empty:
        return None
    r = row.iloc[0]
    fixed = boot_ranks.set_index("encoder").get("crs_corrected")  # basic intervals only
    gap = float("nan") if fixed is None else float(fixed[lead] - fixed[second])
    return {"leader": lead, "runner_up": second, "diff": float(r["diff"]),
            "ci_low": float(r["ci_low"]), "ci_high": float(r["ci_high"]), "diff_corrected": gap,
            "p_leader_better": float(r["p_a_better"])}  # fmt: skip


def _choose_cell(
    board: pd.DataFrame, cells: pd.DataFrame, wanted: tuple[str, str] | None
) -> tuple[str, str]:
    present = set(zip(cells["encoder"], cells["dataset"], strict=True))
    if wanted is not None:
        if tuple(wanted) not in present:
            raise DataError(
                f"calibration cell must be an (encoder, dataset) cell of the store. Got "
                f"{tuple(wanted)} instead; cells are {sorted(present)}."
            )
        return (str(wanted[0]), str(wanted[1]))
    leader = board["encoder"].iloc[0]
    own = sorted(cells.loc[cells["encoder"] == leader, "dataset"])
    return (leader, own[0])


def _curves(rows: pd.DataFrame, x: str) -> pd.DataFrame:
    g = rows.groupby(["dataset", "encoder", x])["auroc"]
    out = g.agg(auroc="mean", auroc_sd="std", n_seeds="count").reset_index()
    return out.sort_values(["dataset", "encoder", x]).reset_index(drop=True)


def _add_bootstrap(data: ReportData, per_seed: pd.DataFrame, analyses: ComputedTables) -> None:
    """The intervals, tiers and rank probabilities of the stored ``bootstrap`` analysis."""
    from crsbench.stats.patient_bootstrap import SEED_ONLY

    board = data.board
    if data.n_replicates <= 0 or board["CRS"].notna().sum() < 2:
        data.missing["uncertainty"] = (
            "the bootstrap needs at least two scored encoders and --replicates ≥ 1"
        )
        return
    if "bootstrap" not in analyses.tables:
        data.missing["uncertainty"] = str(analyses.summary["skipped"].get("bootstrap", ""))
        return
    head = analyses.summary["analyses"]["bootstrap"]
    data.interval_note = str(head.get("note") or "")
    if head["interval"] == SEED_ONLY and per_seed["seed"].nunique() < 2:
        data.missing["uncertainty"] = "the paired-seed bootstrap needs at least two seeds"
        return
    ranks = analyses.tables["bootstrap"]
    info = ranks.set_index("encoder")
    for col in ("crs_ci_low", "crs_ci_high", "crs_corrected", "tier", "p_rank1", "p_top3"):
        board[col] = board["encoder"].map(info[col]) if col in info else np.nan
    board["interval"] = np.where(board["tier"].notna(), head["interval"], "")
    data.interval_method = str(head["interval"])
    data.n_patients = {str(k): int(v) for k, v in (head.get("n_test_patients") or {}).items()}
    data.indistinguishable = list(head.get("indistinguishable") or [])
    data.bootstrap = ranks[ranks["CRS"].notna()].reset_index(drop=True)
    data.leader_gap = _leader_gap(ranks, analyses.tables["bootstrap_pairwise"])
    if data.leader_gap is not None:
        data.leader_gap["interval"] = data.interval_method


def _add_calibration(data: ReportData, wanted: tuple[str, str] | None) -> None:
    from crsbench.stats import recalibration_effect

    runs = data.runs
    recal = stored_or(data, "recalibration", lambda: recalibration_effect(runs, seed=data.seed))
    if recal.empty:
        data.missing["calibration"] = "the store has no recalibrated rows (recalibrator ≠ none)"
        return
    if recal["n_cells"].sum() == 0:
        data.missing["calibration"] = (
            "every recalibrated row is undefined: the calibration splits are below the "
            "recalibration protocol's minimum per class (see details.undefined of the runs)"
        )
    else:
        data.recalibration = recal
    enc, ds = data.calibration_cell = _choose_cell(data.board, data.cells, wanted)
    rows = select_runs(runs, recalibrator=None)
    rows = rows[(rows["encoder"] == enc) & (rows["dataset"] == ds)]
    data.cell_ece = (
        rows[["seed", "recalibrator", "ece", "auroc"]]
        .dropna(subset=["ece"])  # undefined recalibrations are named in the section's note
        .sort_values(["recalibrator", "seed"])
    )
    if data.reliability is not None:
        rel = data.reliability
        rel = rel[(rel["encoder"] == enc) & (rel["dataset"] == ds)]
        data.reliability = rel if not rel.empty else None
        if data.reliability is None:
            data.missing["reliability"] = f"the reliability table has no bins for {enc}/{ds}"
    else:
        data.missing["reliability"] = (
            "the store has no 'reliability' table (per-bin confidence and accuracy), so "
            "true reliability diagrams cannot be drawn"
        )


def _add_robustness(data: ReportData, anchors: Any = None) -> None:
    from crsbench.stats import (
        default_groups,
        ece_increase_by_condition,
        leave_one_target_out,
        shift_auroc_by_encoder,
        shift_welch_by_target,
    )

    runs = data.runs
    rob = stored_or(data, "calibration_under_perturbation", lambda: ece_increase_by_condition(runs))
    if rob.empty:
        data.missing["robustness"] = "the store has no perturbed rows (condition ≠ clean)"
    else:
        data.robustness = rob
    shift = shift_auroc_by_encoder(runs)
    if shift.empty:
        data.missing["shift"] = "the store has no institutional-shift rows (condition = shift)"
        return
    encoders = sorted(shift["encoder"].unique())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        groups = default_groups(encoders, runs)
    if caught:
        data.missing["encoder_groups"] = str(caught[0].message)
    shift["group"] = shift["encoder"].map(groups).astype(object).fillna("unknown")
    data.shift = shift
    try:
        data.shift_test = shift_welch_by_target(shift, groups)
    except CrsbenchError as exc:
        data.missing["shift_test"] = str(exc)
    try:
        loto = stored_or(data, "leave_one_target_out",
                         lambda: leave_one_target_out(data.runs, anchors, plan=data.plan))  # fmt: skip
    except CrsbenchError as exc:
        data.missing["shift_validity"] = str(exc)
        return
    if loto.empty:
        data.missing["shift_validity"] = "no shift target with scored encoders"
    else:
        data.shift_validity = loto


def _add_control_probes(data: ReportData, analyses: ComputedTables) -> None:
    agreement = analyses.tables.get("control_probe_agreement")
    if agreement is None or agreement.empty:
        data.missing["control_probes"] = (
            "the store has no control-probe rows (probe other than logistic)"
        )
        return
    coverage = analyses.tables.get("control_probe_coverage", pd.DataFrame())
    data.control_agreement, data.control_coverage = agreement, coverage


def compute_report_data(
    store_dir: str | Path,
    *,
    n_replicates: int = BOOTSTRAP_REPLICATES,
    seed: int = 0,
    anchors: Any = None,
    calibration_cell: tuple[str, str] | None = None,
    interval: str = "test-patients",
    n_jobs: int | None = None,
    say: Callable[[str], None] | None = None,
) -> ReportData:
    """Load the store, its stored analyses (computed and stored first when absent or stale:
    :func:`crsbench.stats.compute.stored_analyses`) and every table the report shows.

    Parameters
    ----------
    store_dir : path
        Directory holding ``results.duckdb``.
    n_replicates : int
        Paired-seed bootstrap replicates (``0`` skips the uncertainty section).
    seed : int
        Seed of every resampling.
    anchors : anchors source, optional
        Version string, YAML path or :class:`crsbench.scoring.Anchors`; default current.
    calibration_cell : (encoder, dataset), optional
        Cell of the calibration section; default the CRS leader's first dataset.
    interval : {"test-patients", "seed-only"}
        The bootstrap of intervals and tiers (:func:`crsbench.stats.uncertainty.crs_uncertainty`).
    n_jobs : int or None
        Worker processes of the test-set bootstrap (``None``: every available core when the
        work repays it; :func:`crsbench.stats.cell_pool.pool_size`). Results do not depend on it.
    say : callable, optional
        Given one line: whether the analyses were read from the store or computed now.

    Raises
    ------
    StoreError
        The store is missing, locked, or has no complete main-protocol cell to score.
    """
    from crsbench.report.provenance import excluded_cells, shift_rows_sentences
    from crsbench.scoring import aggregate_by_encoder, score_cells
    from crsbench.scoring.anchors import anchors_for_runs
    from crsbench.stats import rank_agreement, rank_moves
    from crsbench.stats.compute import stored_analyses

    runs, plan = load_runs(store_dir), store_plan(store_dir)
    meta, reliability = read_meta(store_dir), read_reliability(store_dir)
    anc = anchors_for_runs(anchors, runs)  # default: what the store's runs recorded
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        per_seed = planned_axes(runs, plan)  # what each cell must hold: the store's plan
        cells = score_cells(per_seed, anc)
    if cells.empty or not cells["CRS"].notna().any():
        why = [f"{e}/{d}: {m}" for e, d, m in
               zip(cells["encoder"], cells["dataset"], cells["missing"], strict=True)][:3]  # fmt: skip
        raise StoreError(
            f"results store {Path(store_dir) / STORE_FILE} must hold at least one complete "
            "main-protocol cell (frozen, logistic, layer 1.0, all four axes). Got none"
            + (" (" + "; ".join(why) + ")." if why else ".")
        )
    cells = add_unrun_cells(cells, planned_cells(str(meta.get("config_json", ""))))
    board = aggregate_by_encoder(cells)
    for col in ("crs_ci_low", "crs_ci_high", "tier", "p_rank1", "p_top3"):
        board[col] = np.nan
    board["interval"] = ""
    data = ReportData(runs=runs, board=board, cells=cells, anchors_version=anc.version,
                      n_replicates=n_replicates, seed=seed, meta=meta, reliability=reliability,
                      cells_left_out=[str(w.message) for w in caught]
                      + incomplete_sentences(cells), plan_notes=plan_notes(store_dir),
                      cells_excluded=excluded_cells(meta),
                      shift_rows=shift_rows_sentences(runs), anchors=anc, interval=interval,
                      store_dir=Path(store_dir), plan=plan, n_jobs=n_jobs)  # fmt: skip
    scored = board[board["CRS"].notna()]
    if len(scored) >= 2:
        auc = dict(zip(scored["encoder"], scored["auroc"], strict=True))
        crs = dict(zip(scored["encoder"], scored["CRS"], strict=True))
        data.agreement = rank_agreement(auc, crs)
        data.rank_moves = rank_moves(auc, crs, names=("auroc", "crs"))
    else:
        data.missing["rank_shift"] = "rank agreement needs at least two scored encoders"
    analyses, _ = stored_analyses(store_dir, runs, n_replicates, seed, anchors, interval=interval,
                                  n_jobs=n_jobs, say=say)  # fmt: skip
    data.analyses = analyses
    _add_bootstrap(data, ranked_per_seed(per_seed, cells), analyses)
    _add_calibration(data, calibration_cell)
    _add_robustness(data, anc)
    clean = select_runs(runs, fraction=None)
    if clean["fraction"].nunique() >= 2:
        data.label_curves = _curves(clean, "fraction")
    else:
        data.missing["label_efficiency"] = "the store has clean rows at only one label fraction"
    depth = select_runs(runs, layer=None)
    if depth["layer"].nunique() >= 2:
        data.depth_curves = _curves(depth, "layer")
    else:
        data.missing["layer_depth"] = "no layer-depth sweep rows in the store (one layer only)"
    _add_control_probes(data, analyses)
    return data
