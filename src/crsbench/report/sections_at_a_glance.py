"""Report section "At a glance": per dataset, the leader on each question, its interval, and
the runner-up when the two are not distinguishable."""

from __future__ import annotations

import numpy as np
import pandas as pd

from crsbench.protocol import SEED_ONLY_RANGE, outside_phrase
from crsbench.report.beyond_data import BeyondData
from crsbench.report.data import ReportData
from crsbench.report.html import Section, esc, files_html, note_html, table_html
from crsbench.report.sections import Writer

SECTION_ID = "at-a-glance"
FLAG_MARK = "†"


def _estimate(value: float, lo: float, hi: float) -> str:
    if not np.isfinite(value):
        return "—"
    return f"{value:.3f} [{lo:.3f}, {hi:.3f}]"


def _corrected(row: pd.Series) -> str:
    """The bias-corrected value beside a basic interval (``""`` beside a range, or an at-a-glance table
    written before the column), with the phrase when the plug-in lies outside the interval."""
    fixed = float(row.get("value_corrected", np.nan))
    if not np.isfinite(fixed) or not np.isfinite(row["value"]):
        return ""
    return outside_phrase(row["value"], row["ci_low"], row["ci_high"], fixed) or f"{fixed:.3f}"


def _gap_corrected(row: pd.Series) -> str:
    fixed = float(row.get("gap_corrected", np.nan))
    return f", bias-corrected {fixed:.3f}" if np.isfinite(fixed) else ""


def _runner_up(row: pd.Series) -> str:
    """``ahead of B`` when the gap's interval excludes 0, else ``≈ B 0.812 (gap 95% CI
    [lo, hi])`` (the gap's interval named by ``gap_interval_kind``)."""
    if row["runner_up"] is None or pd.isna(row["runner_up"]):
        return "— (only one encoder)"
    if bool(row["distinguishable"]):
        return f"ahead of {row['runner_up']}"
    kind = row.get("gap_interval_kind")
    kind = f"{kind} " if isinstance(kind, str) and kind else ""
    return (f"≈ {row['runner_up']} {row['runner_up_value']:.3f} "
            f"(gap {kind}[{row['gap_ci_low']:.3f}, {row['gap_ci_high']:.3f}]"
            f"{_gap_corrected(row)})")  # fmt: skip


def _kind(row: pd.Series) -> str:
    """``95% CI (test patients × seeds)``, ``bootstrap range (test patients × seeds)`` or
    ``seed-only range``: what the row's brackets are (an at-a-glance table written before the
    ``interval_kind`` column: the bootstrap's name alone)."""
    kind = row.get("interval_kind")
    if not isinstance(kind, str) or not kind:
        return str(row["interval"])
    return kind if kind == SEED_ONLY_RANGE else f"{kind} ({row['interval']})"


def readable_at_a_glance(at_a_glance: pd.DataFrame, flagged: list[bool]) -> pd.DataFrame:
    """The page's table: question with its measure (↑ higher / ↓ lower is better), leader
    (``†`` when its pretraining may include the data), value with interval, runner-up
    (named with its value when not distinguishable) and the interval method; beside basic
    intervals, the bias-corrected value (column left out when no row has one). ``flagged``:
    per row, whether its leader's pretraining may include the row's dataset(s) (stored with
    the analyses)."""
    rows = []
    for (_, r), hit in zip(at_a_glance.iterrows(), flagged, strict=True):
        mark = f" {FLAG_MARK}" if hit else ""
        arrow = "↑" if r["higher_is_better"] else "↓"
        rows.append({
            "dataset": r["dataset"],
            "question": f"{r['asks']} ({r['value_name']} {arrow})",
            "leader": f"{r['leader']}{mark}",
            "value [interval]": _estimate(r["value"], r["ci_low"], r["ci_high"]),
            "bias-corrected": _corrected(r),
            "runner-up": _runner_up(r),
            "interval": _kind(r),
        })  # fmt: skip
    table = pd.DataFrame(rows)
    if not table.empty and not table["bias-corrected"].any():  # no basic interval (seed-only)
        table = table.drop(columns="bias-corrected")
    return table


def at_a_glance_section(d: ReportData, b: BeyondData, w: Writer) -> Section:
    """Section "At a glance": the at-a-glance table per dataset."""
    s = Section(
        SECTION_ID, "At a glance: which encoder for what",
        "For each dataset, the encoder that leads on each question with its bootstrap "
        "interval (a 95% CI or a bootstrap range, named on every row). When the interval of its gap to the runner-up includes 0, the two are not "
        "distinguishable on these runs: pick between them on other grounds (licence, cost, "
        "the axis you care about most).",
    )  # fmt: skip
    if b.at_a_glance is None:
        s.parts.append(note_html(b.missing.get("at_a_glance", "not available")))
        return s
    table = readable_at_a_glance(b.at_a_glance, b.at_a_glance_flags)
    methods = ", ".join(sorted(set(b.at_a_glance["interval"])))
    s.parts.append(f'<p class="legend">Intervals: {esc(methods)} bootstrap (named on every '
                   "row with what the brackets are: a 95% CI is a basic bootstrap interval "
                   "shown to cover on planted test sets; a bootstrap range is the 2.5–97.5 % "
                   "spread of the replicates, not shown to cover (the ECE increase under "
                   "shift); a seed-only range ignores that the test set is a sample, and is "
                   "zero-width where the full-label probe does not vary over seeds; see "
                   "docs/scoring.md, 'Every printed interval'). ↑ / ↓: higher / lower is "
                   "better. ≈: the runner-up is not "
                   "distinguishable from the leader (the interval of the gap includes 0). "
                   f"{FLAG_MARK}: the leader's pretraining data may include this dataset "
                   "(section 10).</p>")  # fmt: skip
    for i, (dataset, part) in enumerate(table.groupby("dataset", sort=True)):
        s.parts.append(f"<h3>{esc(dataset)}</h3>")
        s.parts.append(table_html(part.drop(columns="dataset"), table_id=f"at-a-glance-{i}"))
    s.parts.append(files_html([w.csv(b.at_a_glance, "at_a_glance")]))
    return s
