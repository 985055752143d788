"""The tables and facts the HTML report shows beyond the registered analyses, computed once
beside them (:func:`crsbench.stats.analyze.compute_analyses`) and stored with them in
``STORE/computed/<key>.zip``, so that the report (:mod:`crsbench.report`) only reads.

:func:`report_tables` returns tables named ``report_<name>`` and fills
``summary["report"]`` (:data:`REPORT_KEY`): the scored board and cells as the page shows
them (the cells of the config beside the planned ones), the rank agreement with AUROC, the
shift tables, the pretraining-overlap flags with their sources, the weight sweep, the inputs
of the interactive weights panel and the operating-point settings. Where a registered
analysis stored no table (it was skipped), its ``report_<name>`` copy holds what the report
shows instead (the same function on the same inputs: an empty table, or the reason in
``summary["report"]["errors"]``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import asdict

import numpy as np
import pandas as pd

from crsbench.core.errors import CrsbenchError
from crsbench.pretraining import LEVEL_WORDS, load_pretraining
from crsbench.scoring.aggregate import aggregate_by_encoder, score_cells
from crsbench.scoring.anchors import AXES, Anchors
from crsbench.scoring.dominance import UniformReference
from crsbench.scoring.planned import (
    add_unrun_cells,
    incomplete_sentences,
    planned_axes,
    planned_cells,
    ranked_per_seed,
)
from crsbench.stats.agreement import rank_agreement, rank_moves
from crsbench.stats.analysis_registry import AnalysisInputs, jsonable
from crsbench.stats.calibration_effects import ece_increase_by_condition, recalibration_effect
from crsbench.stats.contamination import (
    contamination_flags,
    pretraining_overlap,
    shift_validity_without_flagged,
    shift_welch_without_flagged,
)
from crsbench.stats.control_probes import probe_labels, probe_sentence
from crsbench.stats.operating_point_settings import load_operating_point_settings
from crsbench.stats.shift import (
    default_groups,
    shift_auroc_by_encoder,
    shift_drop_matrix,
    shift_welch_by_target,
)
from crsbench.stats.subgroups import WORST_COLUMNS
from crsbench.stats.validity import leave_one_target_out
from crsbench.stats.weight_sensitivity import pareto_front, weight_sensitivity
from crsbench.store.reader import read_meta

#: Where the report's facts go in the summary, and the prefix of its tables.
REPORT_KEY = "report"
PREFIX = "report_"


def _scored(x: AnalysisInputs, meta: dict, info: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The page's cells (planned axes on the anchors, unrun cells of the config stored in
    ``meta`` beside them) and board; the cells left out as sentences in ``info``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        per_seed = planned_axes(x.runs, x.plan)  # what each cell must hold: the store's plan
        cells = score_cells(per_seed, x.anchors)
    cells = add_unrun_cells(cells, planned_cells(str(meta.get("config_json", ""))))
    info["cells_left_out"] = [str(w.message) for w in caught] + incomplete_sentences(cells)
    info["n_ranked_seeds"] = int(ranked_per_seed(per_seed, cells)["seed"].nunique())
    return cells, aggregate_by_encoder(cells)


def _rank_shift(board: pd.DataFrame, out: dict, info: dict) -> None:
    scored = board[board["CRS"].notna()]
    if len(scored) < 2:
        return
    auc = dict(zip(scored["encoder"], scored["auroc"], strict=True))
    crs = dict(zip(scored["encoder"], scored["CRS"], strict=True))
    info["agreement"] = rank_agreement(auc, crs)
    out["rank_moves"] = rank_moves(auc, crs, names=("auroc", "crs"))


def _fallbacks(x: AnalysisInputs, stored: dict, out: dict, info: dict) -> None:
    """What the report shows for each analysis it reads that stored no table."""
    runs = x.runs
    compute: dict[str, Callable[[], pd.DataFrame]] = {
        "recalibration": lambda: recalibration_effect(runs, seed=x.seed),
        "calibration_under_perturbation": lambda: ece_increase_by_condition(runs),
        "leave_one_target_out": lambda: leave_one_target_out(runs, x.anchors, plan=x.plan),
        "shift_welch_without_flagged": lambda: shift_welch_without_flagged(runs),
        "external_validity_shift_without_flagged": lambda: shift_validity_without_flagged(
            runs, x.anchors, plan=x.plan
        ),
    }
    for name, run in compute.items():
        if name in stored:
            continue
        try:
            out[name] = run()
        except CrsbenchError as exc:
            info["errors"][name] = str(exc)


def _shift(runs: pd.DataFrame, out: dict, info: dict) -> pd.DataFrame:
    """Shift AUROC per encoder with its group, the per-target Welch test and the drops."""
    shift = shift_auroc_by_encoder(runs)
    if shift.empty:
        return shift
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        groups = default_groups(sorted(shift["encoder"].unique()), runs)
    if caught:
        info["encoder_groups"] = str(caught[0].message)
    grouped = shift.assign(group=shift["encoder"].map(groups).astype(object).fillna("unknown"))
    out["shift"] = grouped
    try:
        out["shift_test"] = shift_welch_by_target(grouped, groups)
    except CrsbenchError as exc:
        info["errors"]["shift_test"] = str(exc)
    out["shift_drop"] = shift_drop_matrix(grouped)
    return shift


def _overlap(cells: pd.DataFrame, shift: pd.DataFrame, stored: dict, out: dict, info: dict) -> None:
    """The overlap flags, the flagged cells with their sources, and the at-a-glance table's marks."""
    flags = contamination_flags(cells)
    version = str(flags["catalogue_version"].iloc[0])
    cat = load_pretraining(version or None)
    out["contamination_flags"] = flags
    info["catalogue_version"] = version
    info["pretraining_overlap"] = dict(pretraining_overlap(cells, shift))
    hit = flags[flags["flagged"]]
    rows = []
    for enc, ds, level, why in zip(hit["encoder"], hit["dataset"], hit["level"], hit["why"],
                                   strict=True):  # fmt: skip
        entry = cat.entries.get(enc)
        sources = "; ".join(f"{s.data} ({s.reference})" for s in entry.sources) if entry else ""
        rows.append({"encoder": enc, "dataset": ds, "level": LEVEL_WORDS[level], "why": why,
                     "pretraining sources": sources})  # fmt: skip
    out["overlap_flagged"] = pd.DataFrame(rows)
    at_a_glance = stored.get("at_a_glance")
    if at_a_glance is not None:  # whether each leader's pretraining may include the row's data
        marks = [any(cat.overlap(enc, ds).flagged for ds in str(group).split("→"))
                 for enc, group in zip(at_a_glance["leader"], at_a_glance["dataset"], strict=True)]  # fmt: skip
        out["at_a_glance_flags"] = pd.DataFrame({"flagged": marks})


def _weights(board: pd.DataFrame, cells: pd.DataFrame, anc: Anchors, seed: int, out: dict,
             info: dict) -> None:  # fmt: skip
    """The weight sweep and Pareto front (two scored encoders or more) and the panel's
    anchors: the sign per axis, the protocol weights and whether the reference is exact."""
    sign = [1.0 if anc.bounds[a].best > anc.bounds[a].worst else -1.0 for a in AXES]
    refs = [anc.panel_for(ds) for ds in cells["dataset"].unique()]
    info["weights_panel"] = {"sign": sign, "defaults": {k: float(v) for k, v in anc.weights.items()},
                             "exact": all(isinstance(r, UniformReference) for r in refs)}  # fmt: skip
    scored = board[board["CRS"].notna()]
    if len(scored) < 2:
        return
    out["weight_sweep"], info["sweep_headline"] = weight_sensitivity(scored, anc, seed=seed)
    out["pareto_front"] = pareto_front(scored, anc)


def _control_probes(meta: dict, stored: dict, info: dict) -> None:
    """Readable probe names (kNN's k from the config stored in ``meta``) and one sentence per
    probe."""
    labels = probe_labels(meta)
    info["probe_labels"] = labels
    agreement = stored.get("control_probe_agreement")
    if agreement is None or agreement.empty:
        return
    info["probe_sentences"] = {str(p): probe_sentence(agreement, p, labels.get(p, p))
                               for p in agreement["probe"].unique()}  # fmt: skip


def report_tables(
    x: AnalysisInputs, stored: dict[str, pd.DataFrame], summary: dict
) -> dict[str, pd.DataFrame]:
    """The report's tables (``report_<name>``) from the analyses' inputs ``x`` and the tables
    the analyses ``stored``; the report's facts go to ``summary["report"]``."""
    info: dict = {"errors": {}, "agreement": None, "encoder_groups": None, "probe_sentences": {},
                  "sweep_headline": {}, "worst_columns": list(WORST_COLUMNS),
                  "operating_points": asdict(load_operating_point_settings())}  # fmt: skip
    out: dict[str, pd.DataFrame] = {}
    meta = read_meta(x.store) if x.store is not None else {}
    with np.errstate(all="ignore"):
        cells, board = _scored(x, meta, info)
        out["cells"], out["board"] = cells, board
        _rank_shift(board, out, info)
        _fallbacks(x, stored, out, info)
        shift = _shift(x.runs, out, info)
        _overlap(cells, shift, stored, out, info)
        _weights(board, cells, x.anchors, x.seed, out, info)
        _control_probes(meta, stored, info)
    summary[REPORT_KEY] = jsonable(info)
    return {PREFIX + name: table for name, table in out.items()}
