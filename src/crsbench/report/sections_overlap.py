"""Report section "Pretraining overlap": which results may be inflated because the encoder saw
the evaluation data while it was pretrained, and the shift analyses without them."""

from __future__ import annotations

import pandas as pd

from crsbench.report.beyond_data import BeyondData
from crsbench.report.collapse import line_html, welch_reason
from crsbench.report.data import ReportData
from crsbench.report.html import Section, esc, files_html, note_html, table_html
from crsbench.report.sections import Writer

SECTION_ID = "pretraining-overlap"


def _unknown_line(flags: pd.DataFrame) -> str:
    unknown = sorted(flags.loc[flags["level"] == "unknown", "encoder"].unique())
    if not unknown:
        return ""
    return ("Encoders with cells whose overlap is unknown (their pretraining data are not "
            "described well enough to tell; not flagged, not cleared): "
            + ", ".join(unknown) + ".")  # fmt: skip


def _nothing_flagged(b: BeyondData) -> bool:
    """No shift result is flagged: the analyses without flagged results equal section 7's."""
    if b.welch is None or "excluded" not in b.welch:
        return False
    return not any(str(e) for e in b.welch["excluded"].fillna(""))


def _without_flagged_parts(b: BeyondData, rels: list[str], w: Writer) -> list[str]:
    """The Welch test and external validity with and without flagged results, or the one
    line saying why there is nothing to compare."""
    if b.welch is None:
        return [note_html(b.missing.get("shift", "no shift analysis"))]
    rels.append(w.csv(b.welch, "shift_welch_without_flagged"))
    if b.validity is not None and not b.validity.empty:
        rels.append(w.csv(b.validity, "external_validity_shift_without_flagged"))
    if _nothing_flagged(b):
        return [line_html("No shift result is flagged, so the shift analyses without flagged "
                          "results are those of section 7 (nothing to compare).")]  # fmt: skip
    parts = ["<h3>Medical vs general on the shift target, with and without flagged results</h3>"]
    reason = welch_reason(b.welch)
    parts.append(line_html(reason) if reason else table_html(b.welch, table_id="overlap-welch"))
    if b.validity is not None and not b.validity.empty:
        parts.append("<h3>External validity, with and without flagged results</h3>")
        parts.append(table_html(b.validity, table_id="overlap-validity"))
    return parts


def overlap_section(d: ReportData, b: BeyondData, w: Writer) -> Section:
    """Section 10: flagged cells, and the Welch test and external validity without them."""
    s = Section(
        SECTION_ID, "10. Pretraining overlap",
        "An encoder whose pretraining data include a dataset may score well on it because it "
        "has seen those images. Such cells are flagged (here and in the leaderboard); compare "
        "the shift analyses with and without them before trusting a medical-vs-general gap.",
    )  # fmt: skip
    rels = [w.csv(b.flags, "pretraining_overlap")] if b.flags is not None else []
    table = b.flagged if b.flags is not None else None
    if table is None or table.empty:
        s.parts.append(f'<p class="legend">No scored cell is flagged by pretraining catalogue '
                       f"{esc(b.catalogue_version)}.</p>")  # fmt: skip
    else:
        s.parts.append(table_html(table, table_id="overlap"))
    line = _unknown_line(b.flags) if b.flags is not None else ""
    if line:
        s.parts.append(f'<p class="legend">{esc(line)}</p>')
    s.parts += _without_flagged_parts(b, rels, w)
    s.parts.append(f'<p class="legend">Catalogue {esc(b.catalogue_version)}: each encoder\'s '
                   "pretraining sources with citations, shipped with crsbench "
                   "(crsbench/resources/pretraining). A shift result is flagged when its source or its "
                   "target is.</p>")  # fmt: skip
    s.parts.append(files_html(rels))
    return s
