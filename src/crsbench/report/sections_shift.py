"""The multi-target part of the report's institutional-shift subsection (section 7).

Every shift target the store evaluates: the drop per encoder and target (heat map and table),
the Welch medical-vs-general test per target and external validity leave-one-target-out.
"""

from __future__ import annotations

from typing import Any

from crsbench.report.collapse import line_html, welch_reason
from crsbench.report.data import ReportData
from crsbench.report.html import esc, figure_html, note_html, table_html

LIKE_WITH_LIKE = (
    "Each drop compares like with like: a target that provides fewer labels than the source "
    "(column compared_labels) is compared with the source's clean AUROC on those labels only. "
    "R counts the paper's CheXpert → MIMIC-CXR shift only; the other targets are extras "
    "(robustness_drop_all_shifts counts them all)."
)

LOTO = (
    "For each target T: Spearman rho, across encoders, of the CRS computed without T (every "
    "other shift target counted in R) with the AUROC on T, and whether the CRS winner is the "
    "AUROC winner on T."
)


def shift_target_parts(d: ReportData, w: Any) -> tuple[list[str], list[str]]:
    """HTML parts and CSV paths of the per-target shift results (``d.shift`` must be set)."""
    from crsbench.report.data import report_table
    from crsbench.report.figures_shift import shift_drop_heatmap

    parts = [f'<p class="shift-like">{esc(LIKE_WITH_LIKE)}</p>']
    drop = report_table(d.analyses, "shift_drop")  # type: ignore[arg-type]
    parts.append(figure_html(shift_drop_heatmap(drop, w.fig_dir), "Shift drop heat map"))
    rels = [w.csv(drop.reset_index(), "shift_drop")]
    parts.append("<h4>Medical vs general encoders, per target (Welch t-test)</h4>")
    reason = welch_reason(d.shift_test)
    if d.shift_test is not None:
        rels.append(w.csv(d.shift_test, "shift_welch"))  # the CSV says what the line sums up
    if reason:
        parts.append(line_html(reason))
    elif d.shift_test is not None:
        parts.append(table_html(d.shift_test, table_id="shift-test"))
    else:
        parts.append(note_html("Welch test not run: " + d.missing.get("shift_test", "")))
    parts.append("<h4>External validity, leave one target out</h4>")
    if d.shift_validity is not None:
        parts.append(f"<p>{esc(LOTO)}</p>")
        parts.append(table_html(d.shift_validity, table_id="shift-loto"))
        rels.append(w.csv(d.shift_validity, "leave_one_target_out"))
    else:
        parts.append(note_html(d.missing.get("shift_validity", "not available")))
    return parts, rels
