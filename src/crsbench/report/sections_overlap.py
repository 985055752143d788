"""Report section "Pretraining overlap": which results may be inflated because the encoder saw
the evaluation data while it was pretrained, and the shift analyses without them."""

from __future__ import annotations

import pandas as pd

from crsbench.pretraining import LEVEL_WORDS, load_pretraining
from crsbench.report.beyond_data import BeyondData
from crsbench.report.data import ReportData
from crsbench.report.html import Section, esc, files_html, note_html, table_html
from crsbench.report.sections import Writer

SECTION_ID = "pretraining-overlap"


def flagged_table(flags: pd.DataFrame, catalogue: str) -> pd.DataFrame:
    """The flagged cells with the level, why, and the pretraining sources with citations."""
    cat = load_pretraining(catalogue or None)
    hit = flags[flags["flagged"]]
    rows = []
    for enc, ds, level, why in zip(hit["encoder"], hit["dataset"], hit["level"], hit["why"],
                                   strict=True):  # fmt: skip
        entry = cat.entries.get(enc)
        sources = "; ".join(f"{s.data} ({s.reference})" for s in entry.sources) if entry else ""
        rows.append({"encoder": enc, "dataset": ds, "level": LEVEL_WORDS[level], "why": why,
                     "pretraining sources": sources})  # fmt: skip
    return pd.DataFrame(rows)


def _unknown_line(flags: pd.DataFrame) -> str:
    unknown = sorted(flags.loc[flags["level"] == "unknown", "encoder"].unique())
    if not unknown:
        return ""
    return ("Encoders with cells whose overlap is unknown (their pretraining data are not "
            "described well enough to tell; not flagged, not cleared): "
            + ", ".join(unknown) + ".")  # fmt: skip


def overlap_section(d: ReportData, b: BeyondData, w: Writer) -> Section:
    """Section 10: flagged cells, and the Welch test and external validity without them."""
    s = Section(
        SECTION_ID, "10. Pretraining overlap",
        "An encoder whose pretraining data include a dataset may score well on it because it "
        "has seen those images. Such cells are flagged (here and in the leaderboard); compare "
        "the shift analyses with and without them before trusting a medical-vs-general gap.",
    )  # fmt: skip
    rels = [w.csv(b.flags, "pretraining_overlap")] if b.flags is not None else []
    table = flagged_table(b.flags, b.catalogue_version) if b.flags is not None else None
    if table is None or table.empty:
        s.parts.append(f'<p class="legend">No scored cell is flagged by pretraining catalogue '
                       f"{esc(b.catalogue_version)}.</p>")  # fmt: skip
    else:
        s.parts.append(table_html(table, table_id="overlap"))
    line = _unknown_line(b.flags) if b.flags is not None else ""
    if line:
        s.parts.append(f'<p class="legend">{esc(line)}</p>')
    if b.welch is None:
        s.parts.append(note_html(b.missing.get("shift", "no shift analysis")))
    else:
        s.parts.append("<h3>Medical vs general on the shift target, with and without flagged "
                       "results</h3>")  # fmt: skip
        s.parts.append(table_html(b.welch, table_id="overlap-welch"))
        rels.append(w.csv(b.welch, "shift_welch_without_flagged"))
    if b.validity is not None and not b.validity.empty:
        s.parts.append("<h3>External validity, with and without flagged results</h3>")
        s.parts.append(table_html(b.validity, table_id="overlap-validity"))
        rels.append(w.csv(b.validity, "external_validity_shift_without_flagged"))
    s.parts.append(f'<p class="legend">Catalogue {esc(b.catalogue_version)}: each encoder\'s '
                   "pretraining sources with citations, shipped with crsbench "
                   "(crsbench/resources/pretraining). A shift result is flagged when its source or its "
                   "target is.</p>")  # fmt: skip
    s.parts.append(files_html(rels))
    return s
