"""The report's uncertainty: section 4 and the interval notes under the leaderboard.

Every interval is shown with the method that produced it (``test patients × seeds`` or
``seed-only``); a store without per-sample predictions falls back to seed-only and the page
says so, loudly.
"""

from __future__ import annotations

import pandas as pd

from crsbench.protocol import interval_label, outside_phrase
from crsbench.report import figures_rank as fr
from crsbench.report.data import ReportData
from crsbench.report.html import Section, figure_html, files_html, note_html, stats_html
from crsbench.report.leaderboard_files import estimate_outside_interval_sentence


def interval_lines(d: ReportData) -> list[str]:
    """Which bootstrap the intervals come from, test patients per dataset, and which
    encoders this test set cannot tell apart."""
    if not d.interval_method:
        return []
    out = [
        f"Intervals (95% CI, basic: shown to cover on planted test sets) and tiers: "
        f"{d.interval_method} bootstrap, {d.n_replicates:,} replicates, paired across "
        "encoders; the tiers, P(rank 1) and P(top 3) come from the same bias-corrected "
        "replicates, so no encoder outside tier 1 has a P(rank 1) above about 0.025."
        if d.n_patients
        else f"Seed-only ranges (not 95% CIs: the test set is not resampled) and tiers: "
        f"{d.interval_method} bootstrap, {d.n_replicates:,} replicates."
    ]
    if d.n_patients:
        counts = ", ".join(f"{ds} {n:,}" for ds, n in sorted(d.n_patients.items()))
        out.append(f"Test patients per dataset: {counts}.")
    outside = estimate_outside_interval_sentence(d.board)
    return out + ([outside] if outside else []) + list(d.indistinguishable)


def _gap_corrected(g: dict) -> list[tuple[str, str]]:
    """The gap's bias-corrected estimate (basic intervals only), with the phrase when the
    plug-in gap lies outside its interval."""
    fixed = g.get("diff_corrected", float("nan"))
    if fixed != fixed:
        return []
    why = outside_phrase(g["diff"], g["ci_low"], g["ci_high"], fixed)
    return [("bias-corrected gap", f"{fixed:.3f}" + (f" ({why})" if why else ""))]


def interval_notes(d: ReportData) -> list[str]:
    """HTML paragraphs for under the leaderboard: the fallback note first (loud)."""
    parts = [note_html(f"Note: {d.interval_note}.")] if d.interval_note else []
    return parts + [f'<p class="legend">{line}</p>' for line in interval_lines(d)]


def uncertainty(d: ReportData, w: object) -> Section:
    """Section 4: bootstrap rank probabilities, CRS intervals and the leader's gap."""
    s = Section(
        "uncertainty", "4. Uncertainty",
        "How often each encoder comes first or in the top three when the test patients and "
        "the seeds are resampled (the same resample for every encoder); a leader whose gap "
        "interval includes 0 is not reliably ahead of the runner-up on this test set.",
    )  # fmt: skip
    if d.bootstrap is None:
        s.parts.append(note_html(d.missing.get("uncertainty", "not available")))
        return s
    g = d.leader_gap
    if g is not None:
        verdict = (
            "excludes 0: the lead is significant"
            if g["ci_low"] > 0
            else f"includes 0: on this test set {g['leader']} is not distinguishable from "
            f"{g['runner_up']}"
        )
        s.parts.append(stats_html([
            ("leader", g["leader"]), ("runner-up", g["runner_up"]),
            ("CRS gap", f"{g['diff']:.3f}"),
            (f"{interval_label(d.interval_method)} of the gap ({d.interval_method})",
             f"[{g['ci_low']:.3f}, {g['ci_high']:.3f}]"),
            *_gap_corrected(g),
            ("P(leader ahead)", f"{g['p_leader_better']:.2f}"),
        ]))  # fmt: skip
        s.parts.append(f'<p class="lede">The interval {verdict}.</p>')
    s.parts += interval_notes(d)
    fig = fr.uncertainty_figure(d.bootstrap, w.fig_dir, d.n_replicates, d.interval_method)
    s.parts.append(figure_html(fig, "Bootstrap rank probabilities"))
    rels = [w.csv(d.bootstrap, "bootstrap_ranks")]
    if g is not None:
        rels.append(w.csv(pd.DataFrame([g]), "leader_gap"))
    if d.n_patients:
        patients = pd.DataFrame(sorted(d.n_patients.items()), columns=["dataset", "n_patients"])
        rels.append(w.csv(patients, "test_patients"))
    s.parts.append(files_html(rels))
    return s
