"""Report section "Subgroups": each axis per patient subgroup (sex, age band, view, site),
the worst subgroup, the bias-corrected gap and its permutation test, and the encoder ranking
by worst-subgroup CRS beside the overall one."""

from __future__ import annotations

import numpy as np
import pandas as pd

from crsbench.protocol import MIN_ECE_SUBGROUP_PATIENTS, SUBGROUP_ALPHA
from crsbench.report.collapse import details_html, line_html
from crsbench.report.html import Section, esc, figure_html, files_html, note_html, table_html
from crsbench.report.prediction_data import PredictionData
from crsbench.report.sections import Writer

SECTION_ID = "subgroups"
GUIDE = (
    "How to read: an encoder can be accurate on average and still fail one group of patients. "
    "For every subgroup the dataset records (sex, age band, X-ray view, anatomical site) the "
    "page gives AUROC (higher is better), ECE (calibration error, lower is better) and R (the "
    "robustness drop, lower is better) with bootstrap ranges from resampling test patients "
    "(the 2.5–97.5 % spread of the replicates; not shown to cover, so not 95% CIs). "
    "'Worst' is the weakest subgroup, 'gap' how far it falls behind the best one, corrected "
    "for the upward bias of a best-minus-worst of noisy values. A gap is marked real only "
    "where a permutation test of the subgroup labels (the labels reshuffled among the test "
    "patients, the gap recomputed each time) gives p < 0.05: with identical subgroups at most "
    "1 gap in 20 is marked. ECE is compared debiased and only for subgroups of at least "
    "{n_ece} patients (the ECE of smaller ones is inflated by their size). The ranges beside "
    "the worst value, the gap and the worst-subgroup CRS are bootstrap ranges, not 95% "
    "confidence intervals either. A subgroup with fewer than {n} patients is 'too small': no number "
    "is given for it."
)
RANKING = (
    "Worst-subgroup CRS: the protocol's CRS computed from the worst subgroup's value on each "
    "axis (lowest AUROC, highest debiased ECE, highest R over every reported subgroup); "
    "label efficiency has no subgroup value, so the cell's own retention is used. It is "
    "averaged over the datasets that record subgroups and shown beside the CRS on the same "
    "datasets. The worst of several noisy values is biased low, so this score is a "
    "pessimistic screen, not an estimate with a 95% interval: the bracket is the spread of "
    "the same computation over bootstrap replicates. An encoder that drops in this ranking "
    "may serve some patients worse than its average suggests; the permutation test in the "
    "table below says which gaps the test set shows."
)


def ci(value: float, lo: float, hi: float, digits: int = 3) -> str:
    """``"0.812 [0.790, 0.833]"``; ``"—"`` for a missing value, no bracket without interval."""
    if not np.isfinite(value):
        return "—"
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return f"{value:.{digits}f}"
    return f"{value:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def _col(df: pd.DataFrame, name: str) -> list[str]:
    return [ci(v, lo, hi) for v, lo, hi in zip(df[name], df[f"{name}_lo"], df[f"{name}_hi"],
                                                strict=True)]  # fmt: skip


def ranking_table(r: pd.DataFrame) -> pd.DataFrame:
    """The ranking as shown: worst-subgroup CRS with its interval beside the CRS."""
    return pd.DataFrame({
        "rank (worst subgroup)": r["rank_worst_subgroup"].astype(int),
        "rank (overall)": r["rank_overall"].astype(int), "encoder": r["encoder"],
        "worst-subgroup CRS [bootstrap range]": _col(r, "crs_worst_subgroup"),
        "CRS (same datasets)": r["crs"].round(3), "datasets": r["datasets"],
    })  # fmt: skip


def _verdict(p: float) -> str:
    """The permutation test's verdict on one gap."""
    if not np.isfinite(p):
        return "—"
    return f"real difference (p = {p:.3f})" if p < SUBGROUP_ALPHA else f"not shown (p = {p:.3f})"


def worst_table(worst: pd.DataFrame) -> pd.DataFrame:
    """One row per (encoder, dataset, attribute, axis): worst subgroup, value, gap, test."""
    return pd.DataFrame({
        "encoder": worst["encoder"], "dataset": worst["dataset"],
        "attribute": worst["attribute"], "axis": worst["metric"],
        "worst subgroup": worst["worst_subgroup"],
        "worst [bootstrap range]": _col(worst, "worst"),
        "gap best − worst, bias-corrected [bootstrap range]": [
            ci(v, lo, hi) for v, lo, hi in zip(worst["gap_debiased"], worst["gap_lo"],
                                               worst["gap_hi"], strict=True)],
        "difference (permutation test)": [_verdict(p) for p in worst["p_value"]],
        "subgroups compared": worst["n_compared"],
    })  # fmt: skip


def subgroup_table(sub: pd.DataFrame) -> pd.DataFrame:
    """Every subgroup with its size; a too-small one shows ``too small``, never a number."""
    out = sub[["encoder", "dataset", "attribute", "subgroup", "n_patients"]].copy()
    ok = sub["status"] == "ok"
    for name, label in (("auroc", "AUROC"), ("ece", "ECE"), ("robustness_drop", "R")):
        vals = _col(sub, name) if name in sub else ["—"] * len(sub)
        out[f"{label} [bootstrap range]"] = np.where(ok, vals, sub["status"])
    return out


def subgroups_section(p: PredictionData, w: Writer) -> Section:
    """Section 12: per-subgroup axes, worst subgroup and gap, worst-subgroup CRS ranking."""
    s = Section(
        SECTION_ID, "12. Subgroups", GUIDE.format(n=p.min_patients, n_ece=MIN_ECE_SUBGROUP_PATIENTS)
    )
    if p.subgroups is None:
        s.parts.append(note_html(p.missing.get("subgroups", "not available")))
        return s
    rels = [w.csv(p.subgroups, "subgroup_cells")]
    s.parts += _forest_parts(p, w)
    s.parts.append("<h3>Ranking by worst-subgroup CRS</h3>")
    if p.ranking is not None and not p.ranking.empty:
        s.parts.append(f"<p>{esc(RANKING)}</p>")
        s.parts.append(table_html(ranking_table(p.ranking), sortable=True,
                                  table_id="subgroup-ranking"))  # fmt: skip
        rels += [w.csv(p.ranking, "subgroup_ranking"), w.csv(p.subgroup_crs, "subgroup_crs")]
    else:
        s.parts.append(note_html(p.missing.get("ranking", "not available")))
    compared = p.worst[p.worst["n_compared"] >= 2] if p.worst is not None else None
    if compared is not None and not compared.empty:
        table = table_html(worst_table(compared), sortable=True, table_id="subgroup-worst")
        s.parts.append(details_html(f"Worst subgroup and gap: full table ({len(compared)} rows)",
                                    table))  # fmt: skip
        rels.append(w.csv(p.worst, "subgroups"))
    small = int((p.subgroups["status"] != "ok").sum())
    legend = (f'<p class="legend">{small} (encoder, subgroup) rows are below {p.min_patients} '
              f"patients and shown as too small. Intervals: {p.n_replicates} test-patient "
              "bootstrap replicates.</p>")  # fmt: skip
    table = table_html(subgroup_table(p.subgroups), sortable=True, table_id="subgroup-cells")
    s.parts.append(details_html(f"Every subgroup: full table ({len(p.subgroups)} rows)",
                                legend + table))  # fmt: skip
    s.parts.append(files_html(rels))
    return s


def _single_line(worst: pd.DataFrame | None) -> str:
    """The attributes with one reported subgroup (no gap to compare), in one line."""
    if worst is None or worst.empty:
        return ""
    one = worst[worst["n_compared"] < 2]
    keys = sorted({f"{d} {a}" for d, a in zip(one["dataset"], one["attribute"], strict=True)})
    if not keys:
        return ""
    return ("No gap for " + ", ".join(keys) + ": fewer than two of its subgroups are large "
            "enough to report, so there is nothing to compare.")  # fmt: skip


def _forest_parts(p: PredictionData, w: Writer) -> list[str]:
    """The forest plot (or the line saying no attribute has two reported subgroups)."""
    from crsbench.report.figures_predictions import subgroup_forest_figure

    parts = []
    fig = subgroup_forest_figure(p.subgroups, p.worst, w.fig_dir)
    if fig is None:
        parts.append(line_html("No attribute has two subgroups large enough to report: no "
                               "subgroup comparison on this store."))  # fmt: skip
    else:
        parts.append(figure_html(fig, "Forest plot of subgroups per axis"))
    line = _single_line(p.worst)
    if line:
        parts.append(line_html(line))
    return parts
