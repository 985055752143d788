"""The tables behind the verdict, pretraining-overlap and weight sections.

The verdict is the stored ``verdict`` analysis (:mod:`crsbench.stats.compute`); the overlap
flags and the weight sweep are computed here from the scored board (they take milliseconds).

Everything comes from :mod:`crsbench.stats` (which reads the pretraining catalogue through
:mod:`crsbench.pretraining`), never from the encoder registry. A part the store has no
data for is ``None`` with its reason in :attr:`BeyondData.missing`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from crsbench.report.data import ReportData, stored_or


@dataclass
class BeyondData:
    """Verdict table, overlap flags, shift analyses without flagged results, weight sweep."""

    verdict: pd.DataFrame | None = None
    flags: pd.DataFrame | None = None
    welch: pd.DataFrame | None = None
    validity: pd.DataFrame | None = None
    sweep: pd.DataFrame | None = None
    sweep_headline: dict[str, Any] = field(default_factory=dict)
    front: pd.DataFrame | None = None
    catalogue_version: str = ""
    missing: dict[str, str] = field(default_factory=dict)


def _add_verdict(d: ReportData, out: BeyondData) -> None:
    """The stored ``verdict`` analysis (its intervals: the stored bootstrap's per-cell axes)."""
    if d.n_replicates <= 0:
        out.missing["verdict"] = "intervals need --replicates ≥ 1; the leaders are in the tables"
        return
    stored = d.analyses
    if stored is None or "verdict" not in stored.tables:
        why = "" if stored is None else stored.summary["skipped"].get("verdict", "")
        out.missing["verdict"] = str(why or "the verdict was not computed")
        return
    out.verdict = stored.tables["verdict"]


def _add_overlap(d: ReportData, out: BeyondData) -> None:
    from crsbench.stats.contamination import (
        contamination_flags,
        pretraining_overlap,
        shift_validity_without_flagged,
        shift_welch_without_flagged,
    )
    from crsbench.stats.shift import shift_auroc_by_encoder

    out.flags = contamination_flags(d.cells)
    out.catalogue_version = str(out.flags["catalogue_version"].iloc[0])
    shift = shift_auroc_by_encoder(d.runs)
    marks = pretraining_overlap(d.cells, shift)
    d.board["pretraining_overlap"] = d.board["encoder"].map(marks).fillna("")
    if shift.empty:
        out.missing["shift"] = "the store has no institutional-shift rows (condition = shift)"
        return
    out.welch = stored_or(d, "shift_welch_without_flagged",
                          lambda: shift_welch_without_flagged(d.runs))  # fmt: skip
    out.validity = stored_or(d, "external_validity_shift_without_flagged",
                             lambda: shift_validity_without_flagged(d.runs, d.anchors, plan=d.plan))  # fmt: skip


def _add_weights(d: ReportData, out: BeyondData) -> None:
    from crsbench.stats.weight_sensitivity import pareto_front, weight_sensitivity

    scored = d.board[d.board["CRS"].notna()]
    if len(scored) < 2:
        out.missing["weights"] = "the weight sweep needs at least two scored encoders"
        return
    out.sweep, out.sweep_headline = weight_sensitivity(scored, d.anchors, seed=d.seed)
    out.front = pareto_front(scored, d.anchors)


def compute_beyond(d: ReportData) -> BeyondData:
    """Compute every table of the three sections; adds ``pretraining_overlap`` to the board."""
    out = BeyondData()
    _add_overlap(d, out)
    _add_weights(d, out)
    _add_verdict(d, out)
    return out
