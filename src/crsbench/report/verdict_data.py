"""What the verdict page of a cohort profile shows, read from the verdict stored in the
profile's ``computed/`` folder (computed once by ``crsbench.stats.cohort_verdict``, stored
and read back by ``crsbench.stats.compute.stored_verdict``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from crsbench.store.computed import ComputedTables


@dataclass
class VerdictData:
    """Tables and sentences of the verdict page."""

    board: pd.DataFrame
    recal: pd.DataFrame
    cohort: dict[str, Any]
    sentences: dict[str, str]
    recommended: str | None
    recommended_recal: str
    why: str
    compare: pd.DataFrame | None = None
    notes: list[str] = field(default_factory=list)
    interval: str = ""
    interval_note: str = ""
    n_patients: dict[str, int] = field(default_factory=dict)
    #: Per dataset: the revision (label file and image list sha256) the runs describe.
    revisions: dict[str, str] = field(default_factory=dict)
    #: How far a calibrated model's ECE is from 0 at this test set's size (and whether the
    #: ECE can be read at all), and that R has no shift term (empty when it has one).
    ece_note: str = ""
    r_note: str = ""
    #: Bootstrap replicates of the CRS intervals.
    n_replicates: int = 0


def verdict_from_computed(computed: ComputedTables) -> VerdictData:
    """The page's record from the stored verdict (tables ``board``, ``recal``, ``compare``
    and the summary's fields)."""
    s, t = computed.summary, computed.tables
    return VerdictData(
        board=t["board"], recal=t["recal"], cohort=dict(s["cohort"]),
        sentences=dict(s["sentences"]), recommended=s["recommended"],
        recommended_recal=str(s["recommended_recal"]), why=str(s["why"]),
        compare=t.get("compare"), notes=list(s["notes"]), interval=str(s["interval"]),
        interval_note=str(s["interval_note"]),
        n_patients={str(k): int(v) for k, v in s["n_patients"].items()},
        revisions=dict(s["revisions"]), ece_note=str(s["ece_note"]), r_note=str(s["r_note"]),
        n_replicates=int(s["n_replicates"]),
    )  # fmt: skip
