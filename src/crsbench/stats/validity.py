"""External validity: does the CRS predict performance where it was not measured?"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as sps

from crsbench.protocol import FROZEN
from crsbench.scoring.aggregate import encoder_means, score_cells
from crsbench.scoring.anchors import Anchors
from crsbench.scoring.planned import planned_axes
from crsbench.stats.shift import shift_auroc_by_encoder
from crsbench.store.stored_plan import StoredPlan


def _spearman(pred: dict[str, float], target: dict[str, float]) -> tuple[float, int]:
    common = sorted(set(pred) & set(target))
    if len(common) < 3:
        return np.nan, len(common)
    res = sps.spearmanr([pred[k] for k in common], [target[k] for k in common])
    return float(res.statistic), len(common)


def shift_validity(
    runs: pd.DataFrame,
    anchors: str | Anchors | None = None,
    regime: str = FROZEN,
    plan: StoredPlan | None = None,
) -> pd.DataFrame:
    """Spearman with the shift-target AUROC of: the aggregate CRS computed *without* the shift
    rows, the source cell's CRS without them, the source-domain AUROC, and the aggregate AUROC.

    The CRS is held to ``plan`` (:func:`crsbench.scoring.planned.planned_axes`): an encoder
    with a planned cell or seed absent has no aggregate CRS and leaves the correlation.

    Paper: CRS rho 0.529 vs CheXpert AUROC rho 0.864 against MIMIC AUROC.
    """
    shift = shift_auroc_by_encoder(runs, regime)
    if shift.empty:
        return pd.DataFrame()
    cells = score_cells(planned_axes(runs, plan, regime, include_shift=False), anchors)
    rows = []
    for (source, target), grp in shift.groupby(["dataset", "eval_dataset"], sort=True):
        tgt = dict(zip(grp["encoder"], grp["shift_auroc"], strict=True))
        src_cells = cells[cells["dataset"] == source]
        predictors = {
            "crs_aggregate_without_shift": encoder_means(cells, "CRS"),
            "crs_source_cell_without_shift": encoder_means(src_cells, "CRS"),
            "source_auroc": dict(zip(grp["encoder"], grp["source_auroc"], strict=True)),
            "auroc_aggregate": encoder_means(cells, "auroc"),
        }
        for name, pred in predictors.items():
            rho, n = _spearman(pred, tgt)
            rows.append({"source": source, "target": target, "predictor": name,
                         "n": n, "spearman_rho": rho})  # fmt: skip
    return pd.DataFrame(rows)


def leave_one_dataset_out(cells: pd.DataFrame) -> pd.DataFrame:
    """For each dataset: aggregate CRS (and AUROC) over the *other* datasets vs the held-out
    dataset's AUROC: Spearman, and whether the held-out AUROC winner is the CRS winner.

    Paper: 0.550 / 0.709 / 0.271 for ISIC / APTOS / CheXpert; the winner never recovered.
    """
    rows = []
    for held in sorted(cells["dataset"].unique()):
        others = cells[cells["dataset"] != held]
        target = encoder_means(cells[cells["dataset"] == held], "auroc")
        crs = encoder_means(others, "CRS")
        auc = encoder_means(others, "auroc")
        rho, n = _spearman(crs, target)
        rho_auc, _ = _spearman(auc, target)
        common = sorted(set(crs) & set(target))
        winner = max(common, key=lambda k: target[k]) if common else None
        crs_winner = max(common, key=lambda k: crs[k]) if common else None
        rows.append(
            {
                "held_out": held,
                "n": n,
                "crs_spearman": rho,
                "auroc_spearman": rho_auc,
                "held_out_winner": winner,
                "crs_winner": crs_winner,
                "winner_recovered": bool(common) and winner == crs_winner,
            }
        )
    return pd.DataFrame(rows)


def leave_one_target_out(
    runs: pd.DataFrame,
    anchors: str | Anchors | None = None,
    regime: str = FROZEN,
    plan: StoredPlan | None = None,
) -> pd.DataFrame:
    """External validity generalised to every shift target: for each (source, target T), the
    CRS computed *without* T against the AUROC on T.

    The CRS left out of T counts every other shift target in R (the ``all_shifts`` variant,
    :data:`crsbench.protocol.ROBUSTNESS_VARIANTS`), so each target is predicted from
    everything but itself; with the paper's single target it is the CRS without the shift
    rows of :func:`shift_validity`. The other targets are those ``plan`` names (and any the
    store holds): a planned target no cell evaluated makes R NaN, never silently left out.

    Returns
    -------
    pandas.DataFrame
        One row per (source, target): ``n`` encoders, Spearman rho of the aggregate CRS
        (``crs_spearman``), of the source cell's CRS (``crs_source_spearman``) and of the
        source's AUROC on the compared labels (``source_auroc_spearman``) with the AUROC on T,
        the AUROC winner on T, the CRS winner and whether it is recovered.
    """
    shift = shift_auroc_by_encoder(runs, regime)
    if shift.empty:
        return pd.DataFrame()
    planned = {t for c in plan or () if c.regime == regime for t in c.shift_targets}
    targets = sorted(set(shift["eval_dataset"]) | planned)
    rows = []
    for (source, target), grp in shift.groupby(["dataset", "eval_dataset"], sort=True):
        kept = [t for t in targets if t != target]
        per_seed = planned_axes(runs, plan, regime, include_shift=kept, robustness="all_shifts")
        cells = score_cells(per_seed, anchors)
        held = dict(zip(grp["encoder"], grp["shift_auroc"], strict=True))
        crs = encoder_means(cells, "CRS")
        rho, n = _spearman(crs, held)
        rho_src, _ = _spearman(encoder_means(cells[cells["dataset"] == source], "CRS"), held)
        src_auc = dict(zip(grp["encoder"], grp["source_auroc"], strict=True))
        rho_auc, _ = _spearman(src_auc, held)
        common = sorted(set(crs) & set(held))
        winner = max(common, key=lambda k: held[k]) if common else None
        crs_winner = max(common, key=lambda k: crs[k]) if common else None
        rows.append({"source": source, "target": target, "n": n, "crs_spearman": rho,
                     "crs_source_spearman": rho_src, "source_auroc_spearman": rho_auc,
                     "held_out_winner": winner, "crs_winner": crs_winner,
                     "winner_recovered": bool(common) and winner == crs_winner})  # fmt: skip
    return pd.DataFrame(rows)
