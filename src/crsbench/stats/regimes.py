"""Adaptation regime: frozen vs LoRA rankings, per domain and for the four-axis CRS."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from crsbench.protocol import FROZEN, LORA
from crsbench.scoring.aggregate import encoder_means, score_cells
from crsbench.scoring.anchors import Anchors
from crsbench.scoring.planned import planned_axes
from crsbench.stats.agreement import rank_agreement
from crsbench.store.stored_plan import StoredPlan


def regime_comparison(
    runs: pd.DataFrame,
    anchors: str | Anchors | None = None,
    base: str = FROZEN,
    adapted: str = LORA,
    plan: StoredPlan | None = None,
) -> pd.DataFrame:
    """Per domain: Kendall tau of the AUROC rankings of ``base`` vs ``adapted``, leader change
    and mean AUROC gain; plus one ``all`` row comparing the aggregate CRS rankings (tau and
    mean rank displacement) over the datasets both regimes ran on (a LoRA regime restricted by
    ``regimes.lora.datasets`` is compared with the frozen CRS of those datasets only). Empty
    when ``runs`` has no ``adapted`` rows.

    Each regime's cells are held to ``plan`` (the store's recorded plan: the frozen grid and
    the LoRA cells, :func:`crsbench.scoring.planned.planned_axes`): a planned shift target,
    seed or cell that a regime lacks makes its CRS NaN, named in the ``all`` row's note.

    Paper: tau 0.829 / 0.667 / 0.448 per domain; CRS comparison 0.562, displacement 2.0.
    """
    if not (runs["regime"] == adapted).any():
        return pd.DataFrame()
    with warnings.catch_warnings():  # unscored cells are named in the 'all' row's note
        warnings.simplefilter("ignore", UserWarning)
        cells = {r: score_cells(planned_axes(runs, plan, r), anchors) for r in (base, adapted)}
    rows = []
    for ds in sorted(set(cells[base]["dataset"]) & set(cells[adapted]["dataset"])):
        a = encoder_means(cells[base][cells[base]["dataset"] == ds], "auroc")
        b = encoder_means(cells[adapted][cells[adapted]["dataset"] == ds], "auroc")
        common = sorted(set(a) & set(b))
        if len(common) < 2:
            continue
        agr = rank_agreement(a, b)
        lead_a, lead_b = max(common, key=a.get), max(common, key=b.get)
        rows.append({"scope": ds, "score": "auroc", "n": agr["n"],
                     "kendall_tau": agr["kendall_tau"],
                     "mean_abs_displacement": agr["mean_abs_displacement"],
                     f"leader_{base}": lead_a, f"leader_{adapted}": lead_b,
                     "leader_changed": lead_a != lead_b,
                     "auroc_gain": float(np.mean([b[k] - a[k] for k in common]))})  # fmt: skip
    shared = set(cells[base]["dataset"]) & set(cells[adapted]["dataset"])
    same_cells = {r: t[t["dataset"].isin(shared)] for r, t in cells.items()}
    rows.append(_crs_row(same_cells, base, adapted))
    return pd.DataFrame(rows)


def _crs_row(cells: dict[str, pd.DataFrame], base: str, adapted: str) -> dict:
    """The ``all`` row: aggregate-CRS rankings of the two regimes over the encoders whose CRS
    is defined in both; with fewer than two, NaN statistics and a ``note`` saying why."""
    a, b = encoder_means(cells[base], "CRS"), encoder_means(cells[adapted], "CRS")
    common = sorted(set(a) & set(b))
    row = {"scope": "all", "score": "CRS", "n": len(common), "kendall_tau": np.nan,
           "mean_abs_displacement": np.nan, f"leader_{base}": None,
           f"leader_{adapted}": None, "leader_changed": np.nan, "auroc_gain": np.nan,
           "note": _why_unscored(cells, base, adapted, a, b)}  # fmt: skip
    if len(common) >= 2:
        agr = rank_agreement(a, b)
        lead_a, lead_b = max(common, key=a.get), max(common, key=b.get)
        row |= {"n": agr["n"], "kendall_tau": agr["kendall_tau"],
                "mean_abs_displacement": agr["mean_abs_displacement"],
                f"leader_{base}": lead_a, f"leader_{adapted}": lead_b,
                "leader_changed": lead_a != lead_b}  # fmt: skip
    return row


def _why_unscored(cells: dict[str, pd.DataFrame], base: str, adapted: str, *scored) -> str:
    """Which encoders lack an aggregate CRS in which regime, with the first reason of each."""
    parts = []
    for regime, have in zip((base, adapted), scored, strict=True):
        table = cells[regime]
        for enc in sorted(set(table["encoder"]) - set(have)):
            noted = table[(table["encoder"] == enc) & (table["missing"] != "")]
            why = f"{noted['dataset'].iloc[0]}: {noted['missing'].iloc[0]}" if len(noted) else "NaN"
            parts.append(f"{enc} ({regime}): {why}")
    return "; ".join(parts)
