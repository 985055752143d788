"""Everything the report shows, read from a results store and its stored analyses.

The report only reads: the runs, meta and reliability bins through the store's read-only
reader (:mod:`crsbench.store.reader`) and the analyses computed once and kept in
``STORE/computed/<key>.zip`` (:class:`crsbench.store.computed.ComputedTables`, computed by
``crsbench analyze`` or by the command that asks for the report first): the scored board and
cells, the bootstrap, the verdict, the shift tables, the control probes, the prediction
analyses and the facts in ``summary["report"]``. What it computes itself is selection and
plotting (the calibration cell, the learning curves). It imports nothing of
``crsbench.stats`` or ``crsbench.scoring`` (an import contract). Each analysis that the store
has no data for is left as ``None`` with a one-line reason in :attr:`ReportData.missing`,
which the page shows instead of a figure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from crsbench.core.errors import DataError, StoreError
from crsbench.protocol import SEED_ONLY
from crsbench.store.computed import ComputedTables
from crsbench.store.files import STORE_FILE
from crsbench.store.reader import load_runs, read_meta, read_reliability, select_runs

#: Where the report's own facts are in the stored summary, and the prefix of its tables
#: (written by ``crsbench.stats.report_tables``).
REPORT_KEY = "report"
PREFIX = "report_"

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
    #: The requested bootstrap (``test-patients`` or ``seed-only``) and the store it reads.
    interval: str = "test-patients"
    store_dir: Path | None = None
    #: The note when the store records no plan (:data:`crsbench.store.stored_plan.NO_PLAN_NOTE`).
    plan_notes: list[str] = field(default_factory=list)
    #: The method the intervals came from, why it fell back (or ""), test patients per
    #: dataset, and one sentence per tier of encoders the test set cannot tell apart.
    interval_method: str = ""
    interval_note: str = ""
    n_patients: dict[str, int] = field(default_factory=dict)
    indistinguishable: list[str] = field(default_factory=list)
    #: The stored analyses every section reads.
    analyses: ComputedTables | None = None

    @property
    def facts(self) -> dict[str, Any]:
        """The report's facts of the stored summary (``summary["report"]``)."""
        return {} if self.analyses is None else self.analyses.summary.get(REPORT_KEY, {})


def stored_table(data: ReportData, name: str) -> pd.DataFrame | None:
    """The stored analysis ``name`` (a copy), else the report's stored copy of what it shows
    instead (``report_<name>``: an empty table where the analysis had no rows); ``None``
    when neither is stored (the reason is in :func:`stored_error`)."""
    tables = {} if data.analyses is None else data.analyses.tables
    found = tables.get(name, tables.get(PREFIX + name))
    return None if found is None else found.copy()


def stored_error(data: ReportData, name: str) -> str:
    """Why the report's table ``name`` could not be computed (``""``: it was)."""
    return str(data.facts.get("errors", {}).get(name, ""))


def report_table(analyses: ComputedTables, name: str) -> pd.DataFrame:
    """The report's stored table ``report_<name>``.

    Raises
    ------
    StoreError
        The stored analyses have no such table (written by another crsbench version).
    """
    found = analyses.tables.get(PREFIX + name)
    if found is None:
        raise StoreError(
            f"the stored analyses (key {analyses.key}) must hold the report's table "
            f"{PREFIX + name!r}. They do not: delete the store's computed/ folder and run the "
            "command again to recompute them."
        )
    return found.copy()


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


def _add_bootstrap(data: ReportData, analyses: ComputedTables) -> None:
    """The intervals, tiers and rank probabilities of the stored ``bootstrap`` analysis."""
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
    if head["interval"] == SEED_ONLY and int(data.facts["n_ranked_seeds"]) < 2:
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
    runs = data.runs
    recal = stored_table(data, "recalibration")
    if recal is None or recal.empty:
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


def _add_robustness(data: ReportData) -> None:
    rob = stored_table(data, "calibration_under_perturbation")
    if rob is None or rob.empty:
        data.missing["robustness"] = "the store has no perturbed rows (condition ≠ clean)"
    else:
        data.robustness = rob
    if PREFIX + "shift" not in data.analyses.tables:  # type: ignore[union-attr]
        data.missing["shift"] = "the store has no institutional-shift rows (condition = shift)"
        return
    if data.facts.get("encoder_groups"):
        data.missing["encoder_groups"] = str(data.facts["encoder_groups"])
    data.shift = report_table(data.analyses, "shift")  # type: ignore[arg-type]
    if stored_error(data, "shift_test"):
        data.missing["shift_test"] = stored_error(data, "shift_test")
    else:
        data.shift_test = report_table(data.analyses, "shift_test")  # type: ignore[arg-type]
    loto = stored_table(data, "leave_one_target_out")
    if loto is None:
        data.missing["shift_validity"] = stored_error(data, "leave_one_target_out")
    elif loto.empty:
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
    analyses: ComputedTables,
    *,
    calibration_cell: tuple[str, str] | None = None,
) -> ReportData:
    """Read the store and its stored ``analyses`` into every table the report shows.

    Parameters
    ----------
    store_dir : path
        Directory holding ``results.duckdb``.
    analyses : ComputedTables
        The store's stored analyses (``crsbench.stats.compute.stored_analyses``: computed
        and stored first when absent or stale); their inputs name the replicates, seed and
        interval the page shows.
    calibration_cell : (encoder, dataset), optional
        Cell of the calibration section; default the CRS leader's first dataset.

    Raises
    ------
    StoreError
        The store is missing, locked, or has no complete main-protocol cell to score.
    """
    from crsbench.report.provenance import excluded_cells, shift_rows_sentences

    runs, facts = load_runs(store_dir), analyses.summary.get(REPORT_KEY, {})
    meta, reliability = read_meta(store_dir), read_reliability(store_dir)
    cells, board = report_table(analyses, "cells"), report_table(analyses, "board")
    if cells.empty or not cells["CRS"].notna().any():
        why = [f"{e}/{d}: {m}" for e, d, m in
               zip(cells["encoder"], cells["dataset"], cells["missing"], strict=True)][:3]  # fmt: skip
        raise StoreError(
            f"results store {Path(store_dir) / STORE_FILE} must hold at least one complete "
            "main-protocol cell (frozen, logistic, layer 1.0, all four axes). Got none"
            + (" (" + "; ".join(why) + ")." if why else ".")
        )
    for col in ("crs_ci_low", "crs_ci_high", "tier", "p_rank1", "p_top3"):
        board[col] = np.nan
    board["interval"] = ""
    inputs = analyses.inputs
    data = ReportData(runs=runs, board=board, cells=cells,
                      anchors_version=str(analyses.summary["anchors_version"]),
                      n_replicates=int(inputs["n_replicates"]), seed=int(inputs["seed"]),
                      meta=meta, reliability=reliability,
                      cells_left_out=list(facts["cells_left_out"]),
                      plan_notes=list(analyses.summary.get("notes") or []),
                      cells_excluded=excluded_cells(meta),
                      shift_rows=shift_rows_sentences(runs), interval=str(inputs["interval"]),
                      store_dir=Path(store_dir), analyses=analyses)  # fmt: skip
    if facts.get("agreement") is not None:
        data.agreement = {str(k): float("nan") if v is None else v  # JSON: NaN stored as null
                          for k, v in facts["agreement"].items()}  # fmt: skip
        data.rank_moves = report_table(analyses, "rank_moves")
    else:
        data.missing["rank_shift"] = "rank agreement needs at least two scored encoders"
    _add_bootstrap(data, analyses)
    _add_calibration(data, calibration_cell)
    _add_robustness(data)
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
