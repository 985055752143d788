"""The sections of the report, each from :class:`ReportData` to HTML plus files.

Every section writes its tables as CSV under ``tables/`` and its figures as PNG and SVG under
``figures/``; when the store lacks the data, the section shows a note saying so.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from crsbench.core.diskio import make_folder, write_csv_atomic
from crsbench.protocol import interval_label
from crsbench.report import figures_detail as fd
from crsbench.report import figures_rank as fr
from crsbench.report.collapse import line_html
from crsbench.report.data import BOARD_COLUMNS, ReportData
from crsbench.report.html import (
    Section,
    esc,
    figure_html,
    files_html,
    note_html,
    stats_html,
    table_html,
)
from crsbench.report.left_out_images import quarantine_lines
from crsbench.report.sections_uncertainty import interval_notes

BOARD_HEADERS = {
    "rank_crs": "CRS rank", "rank_auroc": "AUROC rank", "n_cells": "cells",
    "auroc": "D: AUROC", "ece": "C: ECE", "retention": "L: retention",
    "robustness_drop": "R: drop", "robustness_drop_extra": "extras: drop (not in R)",
    "p_rank1": "P(rank 1)", "p_top3": "P(top 3)", "missing": "missing (why NaN)",
    "pretraining_overlap": "pretrain overlap",
    "crs_ci_low": "CRS 95% CI low", "crs_ci_high": "CRS 95% CI high", "crs_ci": "CRS 95% CI",
    "crs_corrected": "CRS bias-corrected",
    "interval": "interval method",
}  # fmt: skip
#: Read under the leaderboard: the headers wrap to fit the page, the legend spells them out.
BOARD_LEGEND = (
    "D: discrimination (macro-AUROC, full labels) · C: calibration (ECE, lower is better) · "
    "L: label efficiency (mean AUROC retention at 1–25 % labels) · R: robustness (AUROC drop "
    "under the 15 conditions, lower is better) · P: Pareto dominance · I: ideal proximity · "
    "W: worst axis · CRS = 0.60·P + 0.25·I + 0.15·W (means over the encoder's cells) · "
    "tier: bootstrap tier (same tier = not significantly different) · P(rank 1), P(top 3): "
    "bootstrap probabilities, counted on the same bias-corrected replicates as the tiers · "
    "pretrain overlap: † n = n cells or shift targets that the "
    "encoder's pretraining data may include (named in section 10 and leaderboard.csv). Definitions: docs/protocol.md, sections 7 "
    "and 8."
)


class Writer:
    """Writes the CSV tables and figures of one report directory."""

    def __init__(self, out_dir: Path) -> None:
        self.out = out_dir
        self.fig_dir = out_dir / "figures"
        self.table_dir = out_dir / "tables"
        make_folder(self.fig_dir)
        make_folder(self.table_dir)
        self.tables: list[str] = []

    def csv(self, df: pd.DataFrame, name: str) -> str:
        """Write ``tables/name.csv``; return its page-relative path."""
        write_csv_atomic(df, self.table_dir / f"{name}.csv", index=False)
        rel = f"tables/{name}.csv"
        self.tables.append(rel)
        return rel


def _missing(d: ReportData, key: str) -> str:
    """The note shown instead of a section part whose data the store lacks."""
    return note_html(d.missing.get(key, "not available"))


def _curve_section(
    s: Section,
    d: ReportData,
    w: Writer,
    frame: pd.DataFrame | None,
    key: str,
    make_figure: Callable[[pd.DataFrame, Path], object],
    caption: str,
) -> Section:
    """Fill ``s`` with one figure of ``frame`` and its CSV ``tables/<key>.csv``, or the note
    saying why ``frame`` is missing."""
    if frame is None:
        s.parts.append(_missing(d, key))
        return s
    s.parts.append(figure_html(make_figure(frame, w.fig_dir), caption))
    s.parts.append(files_html([w.csv(frame, key)]))
    return s


def _overlap_marker(board: pd.DataFrame) -> pd.DataFrame:
    """The page shows ``† n`` (n flagged cells or shift targets) so the board fits the page;
    the CSV and section 10 name them."""
    if "pretraining_overlap" not in board:
        return board
    marks = board["pretraining_overlap"].fillna("")
    return board.assign(pretraining_overlap=[f"† {len(m.split('; '))}" if m else "" for m in marks])


def _page_board(board: pd.DataFrame) -> pd.DataFrame:
    """The board as the page shows it: the CRS interval in one column (the method is named in
    the note under the table, the same for every row) and ``† n`` for pretraining overlap; the
    CSV keeps every column."""
    board = _overlap_marker(board)
    if {"crs_ci_low", "crs_ci_high"} <= set(board):
        lo, hi = board["crs_ci_low"], board["crs_ci_high"]
        ci = [
            f"[{a:.3f}, {b:.3f}]" if pd.notna(a) and pd.notna(b) else ""
            for a, b in zip(lo, hi, strict=True)
        ]
        methods = sorted({m for m in board.get("interval", pd.Series(dtype=str)) if m})
        name = ("CRS " + " / ".join(f"{interval_label(m)} ({m})" for m in methods)
                if methods else "CRS interval")  # fmt: skip
        board = board.drop(columns=["crs_ci_low", "crs_ci_high", "interval"], errors="ignore")
        if "crs_corrected" in board and board["crs_corrected"].isna().all():  # seed-only
            board = board.drop(columns="crs_corrected")
        board.insert(board.columns.get_loc("CRS") + 1, name, ci)
    return board


def leaderboard(d: ReportData, w: Writer) -> Section:
    """Section 1: the sortable leaderboard."""
    board = d.board.copy()
    board = board[[c for c in BOARD_COLUMNS if c in board]]
    rel = w.csv(board, "leaderboard")
    s = Section(
        "leaderboard", "1. Leaderboard",
        "Encoders ordered by CRS; compare the CRS rank with the AUROC rank to see where "
        "reliability changes the choice. Encoders in the same bootstrap tier are not "
        "significantly different; click a column header to sort.",
    )  # fmt: skip
    s.parts.append(table_html(_page_board(board), headers=BOARD_HEADERS, sortable=True,
                              table_id="board"))  # fmt: skip
    s.parts.append(f'<p class="legend">{BOARD_LEGEND}</p>')
    s.parts += interval_notes(d)
    s.parts.append(files_html([rel]))
    if d.cells_excluded:
        s.parts.append(note_html(
            "Cells excluded by the config (not run, not imputed; an encoder's aggregate is the "
            "mean over its own cells): " + ", ".join(d.cells_excluded) + "."
        ))  # fmt: skip
    if d.cells_left_out:
        s.parts.append(note_html("; ".join(d.cells_left_out)))
    s.parts += [note_html(f"{n[0].upper()}{n[1:]}.") for n in d.plan_notes]
    return s


def profiles(d: ReportData, w: Writer) -> Section:
    """Section 2: one utility radar per encoder."""
    cols = ["encoder", "rank_crs", *(c for c, _ in fr.PROFILE_AXES), "CRS"]
    scored = d.board[d.board["CRS"].notna()]  # unscored encoders: see the leaderboard's notes
    rel = w.csv(scored[cols], "profiles")
    s = Section(
        "profiles", "2. Four-axis profiles",
        "Each shape is one encoder on the fixed-anchor utility scale (outer ring = best "
        "bound), so shapes compare directly: a large, even shape is reliable on every axis, a "
        "dent marks the axis that would fail first.",
    )  # fmt: skip
    s.parts.append(figure_html(fr.profiles_figure(scored, w.fig_dir), "Radar chart per encoder"))
    s.parts.append(files_html([rel]))
    return s


def rank_shift(d: ReportData, w: Writer) -> Section:
    """Section 3: AUROC → CRS slope chart and agreement statistics."""
    s = Section(
        "rank-shift", "3. What changes between AUROC and CRS",
        "Lines that cross are encoders whose position depends on whether you judge by AUROC "
        "alone or by reliability; Kendall's tau near 1 means the two rankings mostly agree.",
    )  # fmt: skip
    if d.rank_moves is None or d.agreement is None:
        s.parts.append(_missing(d, "rank_shift"))
        return s
    a = d.agreement
    s.parts.append(stats_html([
        ("Kendall's tau-b", f"{a['kendall_tau']:.3f}"),
        ("Spearman's rho", f"{a['spearman_rho']:.3f}"),
        ("reversed pairs", f"{int(a['reversed_pairs'])} of {int(a['n_pairs'])}"),
        ("mean |rank change|", f"{a['mean_abs_displacement']:.2f}"),
        ("top-3 overlap", f"{a['top3_overlap']:.2f}"),
    ]))  # fmt: skip
    s.parts.append(figure_html(fr.rank_shift_figure(d.rank_moves, w.fig_dir), "Slope chart"))
    rels = [w.csv(d.rank_moves, "rank_moves"), w.csv(pd.DataFrame([a]), "agreement")]
    s.parts.append(files_html(rels))
    return s


def calibration(d: ReportData, w: Writer) -> Section:
    """Section 5: reliability diagrams (or per-seed ECE) of one cell, ECE reduction table."""
    s = Section(
        "calibration", "5. Calibration",
        "How far predicted probabilities sit from observed frequencies before and after each "
        "post-hoc recalibrator; the table gives the mean ECE reduction over every cell with "
        "its bootstrap range over cells (the 2.5–97.5 % spread of the mean when the cells are "
        "resampled: how much it depends on which cells, not a 95% CI) and the (small) AUROC "
        "change.",
    )  # fmt: skip
    if d.calibration_cell is None:
        s.parts.append(_missing(d, "calibration"))
        return s
    enc, ds = d.calibration_cell
    s.parts.append(f"<h3>Chosen cell: {enc} on {ds}</h3>")
    if d.reliability is not None:
        fig = fd.reliability_figure(d.reliability, (enc, ds), w.fig_dir)
        s.parts.append(figure_html(fig, "Reliability diagrams"))
        s.parts.append(files_html([w.csv(d.reliability, "reliability_bins")]))
    if d.recalibration is None:  # one bar ("none (before)") says nothing: the line says why
        s.parts.append(line_html("No recalibration result: " + d.missing.get("calibration", "")))
        return s
    if d.reliability is None:
        s.parts.append(note_html(
            d.missing.get("reliability", "") + ". Shown instead: the ECE of this cell before "
            "and after each recalibrator (bar = seed mean, dots = seeds)."
        ))  # fmt: skip
    if d.cell_ece is not None and not d.cell_ece.empty:
        fig = fd.cell_ece_figure(d.cell_ece, (enc, ds), w.fig_dir)
        s.parts.append(figure_html(fig, "ECE per recalibrator for the chosen cell"))
    s.parts.append("<h3>ECE reduction over all cells</h3>")
    s.parts.append(figure_html(fd.recalibration_summary_figure(d.recalibration, w.fig_dir),
                               "ECE reduction per recalibrator"))  # fmt: skip
    s.parts.append(table_html(d.recalibration, sortable=True, table_id="recalibration"))
    s.parts.append(files_html([w.csv(d.recalibration, "recalibration"),
                               w.csv(d.cell_ece, "calibration_cell")]))  # fmt: skip
    return s


def label_efficiency(d: ReportData, w: Writer) -> Section:
    """Section 6: AUROC vs label fraction per domain."""
    s = Section(
        "label-efficiency", "6. Label efficiency",
        "AUROC as the labelled training set shrinks to 1%: flat curves keep their "
        "discrimination with few labels, steep ones need the full set.",
    )  # fmt: skip
    return _curve_section(s, d, w, d.label_curves, "label_efficiency",
                          fd.label_efficiency_figure, "AUROC vs label fraction")  # fmt: skip


def _extras_line(d: ReportData) -> str:
    """R's conditions and, beside them, the extras' own drop (never pooled into R)."""
    board = d.board
    extra = board["robustness_drop_extra"] if "robustness_drop_extra" in board else None
    line = ("R holds the 15 paper conditions (5 perturbations × 3 severities) and the "
            "institutional shift where one is evaluated; rows marked (extra) are reported "
            "beside R, never inside it.")  # fmt: skip
    if extra is not None and extra.notna().any():
        line += (f" Mean R drop {board['robustness_drop'].mean():.3f}; mean drop over the "
                 f"extras alone {extra.mean():.3f} (R's formula, column 'extras: drop').")  # fmt: skip
    return f'<p class="extras">{esc(line)}</p>'


def robustness(d: ReportData, w: Writer) -> Section:
    """Section 7: perturbation heatmaps and the institutional-shift bars."""
    s = Section(
        "robustness", "7. Robustness",
        "Darker-to-brighter cells show which perturbation and severity costs the most AUROC "
        "and calibration; the bars compare each encoder's AUROC at its source site with the "
        "shifted site, medical and general encoders apart.",
    )  # fmt: skip
    rels = []
    if d.robustness is None:
        s.parts.append(_missing(d, "robustness"))
    else:
        s.parts.append(_extras_line(d))
        rob = d.robustness.copy()
        extra = rob["kind"] == "extra"
        rob.loc[extra, "condition"] = rob.loc[extra, "condition"] + " (extra)"
        s.parts.append(figure_html(fd.robustness_figure(rob, w.fig_dir),
                                   "Heatmaps of AUROC drop and ECE increase"))  # fmt: skip
        rels.append(w.csv(d.robustness, "robustness"))
    s.parts.append("<h3>Institutional shift</h3>")
    s.parts.extend(f'<p class="shift-rows">{esc(sentence)}</p>' for sentence in d.shift_rows)
    if d.shift is None:
        s.parts.append(_missing(d, "shift"))
    else:
        from crsbench.report.sections_shift import shift_target_parts

        s.parts.append(figure_html(fd.shift_figure(d.shift, w.fig_dir), "Shift AUROC bars"))
        rels.append(w.csv(d.shift, "shift"))
        parts, shift_rels = shift_target_parts(d, w)
        s.parts.extend(parts)
        rels.extend(shift_rels)
    s.parts.append(files_html(rels))
    return s


def layer_depth(d: ReportData, w: Writer) -> Section:
    """Section 8: AUROC vs probed layer depth."""
    s = Section(
        "layer-depth", "8. Layer depth",
        "AUROC of a probe on intermediate blocks: a curve that peaks before depth 1 means the "
        "last block is not the best feature for this task.",
    )  # fmt: skip
    return _curve_section(s, d, w, d.depth_curves, "layer_depth",
                          fd.layer_depth_figure, "AUROC vs layer depth")  # fmt: skip


def _revisions(runs: pd.DataFrame, key: str, col: str) -> pd.DataFrame:
    if col not in runs:
        return pd.DataFrame({key: sorted(runs[key].unique()), col: "not recorded"})
    pairs = runs[[key, col]].astype(str).drop_duplicates()
    return pairs.groupby(key)[col].agg(lambda v: ", ".join(sorted(set(v)))).reset_index()


def provenance(d: ReportData, w: Writer, facts: list[tuple[str, object]]) -> Section:
    """Section 10: config, versions, revisions and dates."""
    from crsbench.report.html import kv_html

    s = Section(
        "provenance", "15. Provenance",
        "What produced these numbers: cite the package and anchors versions with any result, "
        "and check the encoder and dataset revisions before comparing with another report.",
    )  # fmt: skip
    s.parts.append(kv_html(facts))
    enc = _revisions(d.runs, "encoder", "encoder_revision")
    data_col = "eval_dataset"
    ds = _revisions(d.runs, data_col, "dataset_revision").rename(columns={data_col: "dataset"})
    s.parts.append("<h3>Encoder revisions</h3>" + table_html(enc))
    s.parts.append("<h3>Dataset revisions</h3>" + table_html(ds))
    lines = quarantine_lines(d.runs)
    if lines:
        items = "".join(f"<li>{esc(line)}</li>" for line in lines)
        s.parts.append("<h3>Quarantined images</h3><ul>" + items + "</ul>")
    config = d.meta.get("config_json")
    if config:
        s.parts.append(f"<details><summary>Resolved config</summary><pre>{esc(config)}</pre>"
                       "</details>")  # fmt: skip
    else:
        s.parts.append(note_html("the store has no meta table, so the resolved config is not "
                                 "recorded"))  # fmt: skip
    rels = [w.csv(enc, "encoder_revisions"), w.csv(ds, "dataset_revisions"),
            w.csv(pd.DataFrame(facts, columns=["key", "value"]), "provenance")]  # fmt: skip
    s.parts.append(files_html(rels))
    return s
