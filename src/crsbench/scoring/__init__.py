"""Scoring: the four axes from run records, and the Clinical Reliability Score (CRS).

Public API
----------
- :func:`crs_table`: utilities, components P / I / W and the CRS under the fixed-anchor or the
  cohort rule.
- :func:`axes_from_runs`, :func:`seed_means`: from run records (read with
  :func:`crsbench.store.load_runs`) to axes.
- :func:`score_cells`, :func:`score_runs`, :func:`aggregate_by_encoder`, :func:`per_domain`.
- :func:`load_anchors`, :func:`freeze_anchors`, :class:`Anchors`: versioned anchors.
- The leaderboard (axes, CRS with its bootstrap tier, overlap flags) sits above the analyses:
  :func:`crsbench.stats.leaderboard.build_leaderboard`.
"""

from __future__ import annotations

from crsbench.scoring.aggregate import aggregate_by_encoder, per_domain, score_cells, score_runs
from crsbench.scoring.anchors import (
    AXES,
    UTILITY_COLUMNS,
    Anchors,
    AxisBound,
    freeze_anchors,
    halton_panel,
    load_anchors,
    save_anchors,
)
from crsbench.scoring.axes import axes_from_runs, seed_means
from crsbench.scoring.crs import RULES, crs_components, crs_table, score_array
from crsbench.scoring.dominance import DominanceCounter, cohort_dominance

__all__ = [
    "AXES",
    "RULES",
    "UTILITY_COLUMNS",
    "Anchors",
    "AxisBound",
    "DominanceCounter",
    "aggregate_by_encoder",
    "axes_from_runs",
    "cohort_dominance",
    "crs_components",
    "crs_table",
    "freeze_anchors",
    "halton_panel",
    "load_anchors",
    "per_domain",
    "save_anchors",
    "score_array",
    "score_cells",
    "score_runs",
    "seed_means",
]
