"""The tables behind the subgroup, operating-point and flip sections: the stored analyses of
the store's per-sample predictions (:mod:`crsbench.stats.compute`, read, never recomputed here).

A store without per-sample predictions (or a part without the rows it needs) leaves that part
``None`` with its reason in :attr:`PredictionData.missing`, which the page shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from crsbench.protocol import MIN_SUBGROUP_PATIENTS
from crsbench.report.data import ReportData

NO_PREDICTIONS = (
    "the store has no per-sample predictions for any complete cell (stores written before "
    "predictions were stored, or cells run without them)"
)


@dataclass
class PredictionData:
    """Subgroup tables, worst-subgroup CRS and ranking, operating points, flips."""

    subgroups: pd.DataFrame | None = None
    worst: pd.DataFrame | None = None
    subgroup_crs: pd.DataFrame | None = None
    ranking: pd.DataFrame | None = None
    transfer: pd.DataFrame | None = None
    lost: pd.DataFrame | None = None
    flips: pd.DataFrame | None = None
    min_patients: int = 0
    n_replicates: int = 0
    #: The operating-point settings the analyses used (version, targets, tolerance, fewest
    #: positives), stored with them.
    operating_points: dict[str, Any] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)


def _tables(d: ReportData) -> dict[str, pd.DataFrame]:
    return {} if d.analyses is None else d.analyses.tables


def _add_subgroups(
    tables: dict[str, pd.DataFrame], out: PredictionData, worst_columns: list[str]
) -> None:
    cells = tables.get("subgroup_cells")
    if cells is None or cells.empty:
        out.missing["subgroups"] = "no test split carries subgroup metadata (sex, age, view, site)"
        return
    out.subgroups = cells
    out.worst = tables.get("subgroups", pd.DataFrame(columns=worst_columns))
    if "subgroup_crs" in tables:
        out.subgroup_crs, out.ranking = tables["subgroup_crs"], tables["subgroup_ranking"]
    else:
        out.missing["ranking"] = "every subgroup is below the minimum size"


def _add_operating_points(tables: dict[str, pd.DataFrame], out: PredictionData) -> None:
    if "operating_point_transfer" not in tables:
        out.missing["operating_points"] = "the store has no validation predictions"
        return
    out.transfer = tables["operating_point_transfer"]
    if "operating_points" not in tables:
        out.missing["transfer"] = "the store has no shift target with predictions"
    else:
        out.lost = tables["operating_points"]


def compute_predictions(d: ReportData) -> PredictionData:
    """The tables of the three sections: the stored ``subgroups``, ``operating_points`` and
    ``prediction_flips`` analyses of ``d``'s store (and the tables beside them)."""
    out = PredictionData(min_patients=MIN_SUBGROUP_PATIENTS, n_replicates=max(d.n_replicates, 1),
                         operating_points=dict(d.facts["operating_points"]))  # fmt: skip
    tables = _tables(d)
    if "subgroup_cells" not in tables:  # written whenever the store has predictions
        for key in ("subgroups", "operating_points", "flips"):
            out.missing[key] = NO_PREDICTIONS
        return out
    _add_subgroups(tables, out, list(d.facts["worst_columns"]))
    _add_operating_points(tables, out)
    if "prediction_flips" not in tables:
        out.missing["flips"] = "no perturbed predictions (or no validation predictions)"
    else:
        out.flips = tables["prediction_flips"]
    return out
