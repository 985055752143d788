"""Report section "Control probes": encoder rankings under MLP and kNN vs the logistic probe."""

from __future__ import annotations

import pandas as pd

from crsbench.report.data import ReportData
from crsbench.report.html import Section, esc, files_html, note_html, table_html
from crsbench.report.sections import Writer

SECTION_ID = "control-probes"


def _pairs(row: pd.Series) -> str:
    if pd.isna(row["n_pairs"]) or pd.isna(row["kendall_tau"]):
        return "—"
    return f"{int(row['reversed_pairs'])} of {int(row['n_pairs'])}"


def _same(row: pd.Series) -> str:
    if pd.isna(row["rank1_agrees"]):
        return "—"
    if bool(row["rank1_agrees"]):
        return f"yes ({row['logistic_rank1']})"
    return f"no ({row['probe_rank1']} vs {row['logistic_rank1']})"


def readable_table(agreement: pd.DataFrame, labels: dict[str, str]) -> pd.DataFrame:
    """One line per (probe, dataset): tau, reversed pairs and rank-1 agreement of both rankings."""
    wide = []
    for (probe, dataset), part in agreement.groupby(["probe", "dataset"], sort=False):
        line: dict[str, object] = {"probe": labels.get(probe, probe), "dataset": dataset}
        for _, r in part.iterrows():
            name = "AUROC" if r["ranking"] == "auroc" else "CRS"
            line[f"{name} tau"] = float(r["kendall_tau"])
            line[f"{name} reversed pairs"] = _pairs(r)
            line[f"{name} same rank 1"] = _same(r)
        line["encoders"] = int(part["n_encoders"].max())
        wide.append(line)
    return pd.DataFrame(wide)


def _coverage_html(label: str, coverage: pd.DataFrame) -> str:
    """Which axes came from the probe's own rows; a note naming what is missing, if anything."""
    own = ", ".join(coverage.loc[coverage["from_probe"], "axis"]) or "none"
    text = f"{label}: axes computed from its own rows: {own}."
    notes = [f"{r['axis']} ({r['note']})" for _, r in coverage.iterrows() if r["note"]]
    if not notes:
        return f"<p>{esc(text)}</p>"
    missing = " A missing axis is never taken from the logistic probe: " + "; ".join(notes) + "."
    return note_html(text + missing)


def control_probes(d: ReportData, w: Writer) -> Section:
    """Section: ranking agreement of each control probe with the logistic probe."""
    s = Section(
        SECTION_ID, "9. Control probes",
        "Encoders ranked by AUROC and by CRS under the control probes (an MLP and kNN, fitted "
        "on the same features, splits and seeds) against the logistic probe's ranking: a tau "
        "near 1, few reversed pairs and the same rank-1 encoder mean the conclusions do not "
        "hinge on the classifier.",
    )  # fmt: skip
    if d.control_agreement is None or d.control_coverage is None:
        s.parts.append(note_html(d.missing.get("control_probes", "not available")))
        return s
    labels = dict(d.facts["probe_labels"])
    for sentence in d.facts["probe_sentences"].values():
        s.parts.append(f"<p>{esc(sentence)}</p>")
    s.parts.append(table_html(readable_table(d.control_agreement, labels), table_id="control"))
    cov = d.control_coverage
    for probe, part in cov.groupby("probe", sort=False):
        s.parts.append(_coverage_html(labels.get(probe, probe), part))
    rels = [
        w.csv(d.control_agreement, "control_probe_agreement"),
        w.csv(cov, "control_probe_coverage"),
    ]
    s.parts.append(files_html(rels))
    return s
