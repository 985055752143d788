"""Worst-subgroup CRS: the protocol's CRS of each cell's worst subgroup axis values, and the
encoder ranking by it beside the overall ranking (``docs/scoring.md``, "Worst-subgroup CRS").

For a cell (encoder, dataset) the worst-subgroup axes are, over every reported subgroup of
every attribute (``too small`` ones never enter): D the lowest subgroup AUROC, C the highest
subgroup debiased ECE (subgroups of at least ``MIN_ECE_SUBGROUP_PATIENTS``), R the highest
subgroup robustness drop (R's formula on the subgroup's rows).
L (label-efficiency retention) has no subgroup value (the probes at 1-25 % of the labels are
fitted on the whole training split), so the cell's own retention is used. These four raw
values are scored exactly as a cell's CRS is: fixed-anchor utilities, dominance against the
dataset's reference panel, ``wP·P + wI·I + wW·W``. ``_lo``/``_hi``: the same computation on each
replicate of the paired test-patient bootstrap (L held at its point value), a bootstrap range,
not a confidence interval (the worst of noisy values is biased low).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from crsbench.scoring.anchors import AXES, Anchors
from crsbench.scoring.crs import score_array
from crsbench.stats.intervals import percentile_interval
from crsbench.stats.subgroups import SubgroupResult

#: The subgroup analysis's name of each raw CRS axis (retention has none).
_SUBGROUP_AXIS = {"auroc": "auroc", "ece": "ece", "robustness_drop": "robustness_drop"}


def _crs(raw: np.ndarray, anchors: Anchors, dataset: str) -> np.ndarray:
    """CRS of ``(n, 4)`` raw axes of one dataset (fixed anchors, the dataset's panel)."""
    out = score_array(raw[:, None, None, :], anchors, "fixed", [anchors.panel_for(dataset)])
    return out["CRS"][:, 0, 0]


def worst_subgroup_crs(
    result: SubgroupResult, cells: pd.DataFrame, anchors: Anchors, level: float = 0.95
) -> tuple[pd.DataFrame, dict[tuple[str, str], np.ndarray]]:
    """Per cell with a reported subgroup: the worst-subgroup axes and their CRS.

    Parameters
    ----------
    result : SubgroupResult
        :func:`crsbench.stats.subgroups.subgroup_analysis`'s result.
    cells : pandas.DataFrame
        The scored cells (:func:`crsbench.scoring.aggregate.score_cells`): ``retention`` and
        the cell's own ``CRS``.
    anchors : Anchors
        The anchors the cells were scored with.
    level : float
        Interval level.

    Returns
    -------
    (pandas.DataFrame, dict)
        One row per cell: ``auroc_worst``, ``ece_worst``, ``robustness_drop_worst`` (with the
        subgroup each comes from), ``retention`` (the cell's), ``crs_worst_subgroup`` with
        ``_lo``/``_hi`` and the cell's ``CRS``; and the ``(1 + B,)`` worst-subgroup CRS per
        cell (point first) for the encoder means.
    """
    own = cells.set_index(["encoder", "dataset"])
    rows, reps = [], {}
    for (enc, ds), axes in sorted(result.axes.items()):
        if (enc, ds) not in own.index:
            continue
        cell = own.loc[(enc, ds)]
        n = len(axes["auroc"][0])
        raw = np.column_stack([axes[_SUBGROUP_AXIS[a]][0] if a in _SUBGROUP_AXIS
                               else np.full(n, float(cell["retention"])) for a in AXES])  # fmt: skip
        crs = _crs(raw, anchors, ds)
        reps[(enc, ds)] = crs
        lo, hi = percentile_interval(crs[1:], level)
        row = {"encoder": enc, "dataset": ds}
        for a, (vals, where) in axes.items():
            row.update({f"{a}_worst": float(vals[0]), f"{a}_worst_subgroup": where})
        row.update(
            retention=float(cell["retention"]),
            crs_worst_subgroup=float(crs[0]),
            crs_worst_subgroup_lo=lo,
            crs_worst_subgroup_hi=hi,
            CRS=float(cell["CRS"]),
        )
        rows.append(row)
    return pd.DataFrame(rows), reps


def worst_subgroup_ranking(
    per_cell: pd.DataFrame, reps: dict[tuple[str, str], np.ndarray], level: float = 0.95
) -> pd.DataFrame:
    """Encoders ranked by their worst-subgroup CRS beside their CRS on the same datasets.

    Parameters
    ----------
    per_cell, reps
        :func:`worst_subgroup_crs`'s outputs.
    level : float
        Interval level.

    Returns
    -------
    pandas.DataFrame
        ``encoder``, ``datasets`` (those with subgroup metadata, ``;``-joined),
        ``crs_worst_subgroup`` (mean over those datasets, as the overall CRS is a mean over
        cells) with ``_lo``/``_hi`` (the mean per replicate: the replicates are paired across
        datasets), ``crs`` (the overall CRS over the same datasets), ``rank_worst_subgroup``
        and ``rank_overall`` (1 = best) and ``rank_change`` (overall − worst-subgroup rank).
    """
    if per_cell.empty:
        return pd.DataFrame()
    rows = []
    for enc, grp in per_cell.groupby("encoder", sort=True):
        rep = np.mean([reps[(enc, d)] for d in grp["dataset"]], axis=0)
        lo, hi = percentile_interval(rep[1:], level)
        rows.append({"encoder": enc, "datasets": ";".join(grp["dataset"]),
                     "crs_worst_subgroup": float(rep[0]), "crs_worst_subgroup_lo": lo,
                     "crs_worst_subgroup_hi": hi, "crs": float(grp["CRS"].mean())})  # fmt: skip
    table = pd.DataFrame(rows)
    table["rank_worst_subgroup"] = table["crs_worst_subgroup"].rank(ascending=False, method="min")
    table["rank_overall"] = table["crs"].rank(ascending=False, method="min")
    table["rank_change"] = table["rank_overall"] - table["rank_worst_subgroup"]
    return table.sort_values(["rank_worst_subgroup", "encoder"]).reset_index(drop=True)
