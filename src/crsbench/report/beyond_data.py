"""The tables behind the at-a-glance table, pretraining-overlap and weight sections.

All read from the stored analyses (:mod:`crsbench.store.computed`): the at-a-glance table, the overlap
flags with the pretraining sources (computed from the shipped catalogue when the analyses
were), the shift analyses without flagged results and the weight sweep. A part the store has
no data for is ``None`` with its reason in :attr:`BeyondData.missing`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from crsbench.report.data import PREFIX, ReportData, report_table, stored_error, stored_table


@dataclass
class BeyondData:
    """Verdict table, overlap flags, shift analyses without flagged results, weight sweep."""

    at_a_glance: pd.DataFrame | None = None
    flags: pd.DataFrame | None = None
    welch: pd.DataFrame | None = None
    validity: pd.DataFrame | None = None
    sweep: pd.DataFrame | None = None
    sweep_headline: dict[str, Any] = field(default_factory=dict)
    front: pd.DataFrame | None = None
    catalogue_version: str = ""
    #: The flagged cells with level, why and pretraining sources; per at-a-glance row, whether
    #: its leader's pretraining may include the row's data.
    flagged: pd.DataFrame | None = None
    at_a_glance_flags: list[bool] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)


def _add_at_a_glance(d: ReportData, out: BeyondData) -> None:
    """The stored ``at_a_glance`` analysis (its intervals: the stored bootstrap's per-cell axes)."""
    if d.n_replicates <= 0:
        out.missing["at_a_glance"] = (
            "intervals need --replicates ≥ 1; the leaders are in the tables"
        )
        return
    stored = d.analyses
    if stored is None or "at_a_glance" not in stored.tables:
        why = "" if stored is None else stored.summary["skipped"].get("at_a_glance", "")
        out.missing["at_a_glance"] = str(why or "the at-a-glance table was not computed")
        return
    out.at_a_glance = stored.tables["at_a_glance"]


def _add_overlap(d: ReportData, out: BeyondData) -> None:
    analyses = d.analyses
    assert analyses is not None
    out.flags = report_table(analyses, "contamination_flags")
    out.flagged = report_table(analyses, "overlap_flagged")
    out.catalogue_version = str(d.facts["catalogue_version"])
    if PREFIX + "at_a_glance_flags" in analyses.tables:
        out.at_a_glance_flags = [
            bool(v) for v in analyses.tables[PREFIX + "at_a_glance_flags"]["flagged"]
        ]
    marks = d.facts.get("pretraining_overlap", {})
    d.board["pretraining_overlap"] = d.board["encoder"].map(marks).fillna("")
    if PREFIX + "shift" not in analyses.tables:
        out.missing["shift"] = "the store has no institutional-shift rows (condition = shift)"
        return
    out.welch = _table_or_raise(d, "shift_welch_without_flagged")
    out.validity = _table_or_raise(d, "external_validity_shift_without_flagged")


def _table_or_raise(d: ReportData, name: str) -> pd.DataFrame:
    """The stored table ``name``, else the error that stopped it (as the analysis raised it)."""
    from crsbench.core.errors import DataError

    found = stored_table(d, name)
    if found is None:
        raise DataError(stored_error(d, name))
    return found


def _add_weights(d: ReportData, out: BeyondData) -> None:
    analyses = d.analyses
    assert analyses is not None
    if PREFIX + "weight_sweep" not in analyses.tables:
        out.missing["weights"] = "the weight sweep needs at least two scored encoders"
        return
    out.sweep = report_table(analyses, "weight_sweep")
    out.sweep_headline = dict(d.facts.get("sweep_headline") or {})
    out.front = report_table(analyses, "pareto_front")


def compute_beyond(d: ReportData) -> BeyondData:
    """Compute every table of the three sections; adds ``pretraining_overlap`` to the board."""
    out = BeyondData()
    _add_overlap(d, out)
    _add_weights(d, out)
    _add_at_a_glance(d, out)
    return out
