"""The one-page verdict of a cohort profile: self-contained HTML in the report's style.

Sections: the verdict (recommended encoder and recalibrator, one sentence per encoder), the
ranking with intervals, the recalibration effect, the cohort (size, label prevalence, the
choices the profile made) and, with ``--compare STORE``, the benchmark beside the cohort.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pandas as pd

from crsbench.protocol import SEED_ONLY, TEST_PATIENTS_X_SEEDS
from crsbench.report.html import Section, esc, kv_html, note_html, page_html, stats_html, table_html
from crsbench.report.verdict_data import VerdictData
from crsbench.store.outputs import write_output_file

VERDICT_FILE = "verdict.html"
_RANK_COLUMNS = {
    "rank_crs": "rank", "encoder": "encoder", "CRS": "CRS", "crs_ci_low": "CRS low",
    "crs_ci_high": "CRS high", "crs_corrected": "CRS bias-corrected", "interval": "interval",
    "auroc": "AUROC (D)", "ece": "ECE (C)", "retention": "retention (L)", "robustness_drop": "robustness drop (R)",
    "worst_condition": "worst condition", "worst_severity": "severity",
    "worst_drop": "AUROC lost there",
}  # fmt: skip


def _verdict_section(d: VerdictData) -> Section:
    c = d.cohort
    stats = [("images", str(c.get("n_images", "—"))), ("patients", str(c.get("n_patients", "—"))),
             ("task", str(c.get("task", "—"))), ("recommended encoder", d.recommended or "—"),
             ("recommended recalibrator", d.recommended_recal),
             ("data revision", ", ".join(r[:12] for r in d.revisions.values()) or "—")]  # fmt: skip
    items = "".join(
        f"<li><strong>{esc(enc)}</strong>: {esc(text)}</li>" for enc, text in d.sentences.items()
    )
    lede = (f"Recommended: {d.recommended} ({d.why}), with recalibrator "
            f"{d.recommended_recal}." if d.recommended else d.why)  # fmt: skip
    notes = [note_html(n) for n in (d.ece_note, d.r_note) if n]
    return Section("verdict", "Verdict", lede, [stats_html(stats), f"<ul>{items}</ul>", *notes])


def interval_lede(d: VerdictData) -> str:
    """What the ranking's intervals are: the bootstrap that made them, in words."""
    if d.interval == TEST_PATIENTS_X_SEEDS:
        counts = ", ".join(f"{k} {v:,}" for k, v in sorted(d.n_patients.items()))
        return (f"Intervals (CRS low / high): 95% CI (basic) from the paired bootstrap over "
                f"test patients × seeds "
                f"({d.n_replicates:,} replicates; test patients: {counts}).")  # fmt: skip
    if d.interval == SEED_ONLY:
        return (f"Intervals (CRS low / high): seed-only ranges, not 95% CIs "
                f"({d.n_replicates:,} replicates; the seeds re-draw the label subsamples, "
                "test-set variation is not in them).")  # fmt: skip
    return "No CRS intervals (see the note)."


def _ranking_section(d: VerdictData) -> Section:
    unset = "crs_corrected" in d.board and d.board["crs_corrected"].isna().all()  # seed-only
    cols = [c for c in _RANK_COLUMNS if c in d.board and not (unset and c == "crs_corrected")]
    parts = [] if not d.interval_note else [note_html(f"NOTE: {d.interval_note}.")]
    parts += [note_html(d.r_note)] if d.r_note else []
    parts += [table_html(d.board[cols], headers=_RANK_COLUMNS, sortable=True, table_id="ranking")]
    parts += [note_html(n) for n in d.notes]
    lede = ("Encoders by CRS on the fixed anchors (comparable with any published crsbench "
            "leaderboard). " + interval_lede(d))  # fmt: skip
    return Section("ranking", "Ranking on this cohort", lede, parts)


def _recal_section(d: VerdictData) -> Section:
    wide = d.recal.pivot(index="encoder", columns="recalibrator", values="ece").reset_index()
    wide.columns = [str(c) if c == "encoder" else f"ECE {c}" for c in wide.columns]
    lede = ("Clean-test ECE of the full-label probe as fitted (none) and after each "
            "recalibrator, fitted on the calibration split (seed means; — where the "
            "calibration split is below the protocol's minimum per class).")  # fmt: skip
    parts = [table_html(wide)] + ([note_html(d.ece_note)] if d.ece_note else [])
    return Section("recalibration", "Recalibration effect", lede, parts)


def _cohort_section(d: VerdictData) -> Section:
    c = d.cohort
    if not c:
        return Section("cohort", "Cohort", "", [note_html("no cohort.json in the store")])
    prev = pd.DataFrame({"label": list(c["prevalence"]),
                         "positive images": [c["positives"][k] for k in c["prevalence"]],
                         "prevalence": list(c["prevalence"].values())})  # fmt: skip
    facts = [("CSV", c.get("csv", "")), ("images", c.get("images", "")),
             ("label columns", ", ".join(c.get("label_columns", []))),
             ("patient column", c.get("group_column") or "none (one image per patient)"),
             ("splits", ", ".join(f"{k} {v}" for k, v in c.get("split_sizes", {}).items())),
             ("revision", "; ".join(f"{k} {v}" for k, v in d.revisions.items())
              + " (sha256 of the CSV and the label options: the data these results describe)")]  # fmt: skip
    parts = [kv_html(facts), table_html(prev), "<ul>"
             + "".join(f"<li>{esc(x)}</li>" for x in [*c.get("choices", []),
                                                      *c.get("warnings", [])]) + "</ul>"]  # fmt: skip
    return Section("cohort", "Cohort", "Size, label prevalence and the profile's choices.", parts)


def _compare_section(d: VerdictData) -> Section | None:
    if d.compare is None:
        return None
    lede = ("The cohort's profile beside the benchmark store's for the same encoders (benchmark "
            "values: the mean over its datasets; — where the benchmark lacks the encoder).")  # fmt: skip
    parts = [note_html(d.r_note)] if d.r_note else []
    return Section("compare", "Beside the benchmark", lede, [*parts, table_html(d.compare)])


def verdict_html(d: VerdictData, store_dir: Path) -> str:
    """The page for ``d``."""
    sections = [_verdict_section(d), _ranking_section(d), _recal_section(d), _cohort_section(d)]
    extra = _compare_section(d)
    if extra is not None:
        sections.append(extra)
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return page_html("CRS-Bench cohort verdict", f"store {store_dir}", sections,
                     f"crsbench profile verdict, written {now}.")  # fmt: skip


def save_verdict(d: VerdictData, store_dir: Path | str, out: Path | None = None) -> Path:
    """Write the page of ``d`` (default ``store_dir/verdict.html``) atomically where crsbench
    may write (:func:`crsbench.store.outputs.write_output_file`); return the path."""
    store_dir = Path(store_dir)
    path = Path(out) if out is not None else store_dir / VERDICT_FILE
    page = verdict_html(d, store_dir)
    return write_output_file(path, lambda tmp: tmp.write_text(page, encoding="utf-8"))
