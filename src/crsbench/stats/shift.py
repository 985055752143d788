"""Institutional shift: shift-target AUROC of medical vs general encoders (Welch t-test)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd
from scipy import stats as sps

from crsbench.core.errors import CrsbenchError
from crsbench.stats._select import select

#: Card ``family_group`` → the two groups of the test.
GROUP_OF_FAMILY = {"general": "general", "baseline": "general",
                   "medical": "medical", "specialist": "medical"}  # fmt: skip


def _card_group(name: str) -> str | None:
    try:
        import crsbench.encoders as enc_mod

        registry = getattr(enc_mod, "ENCODERS", None) or getattr(enc_mod, "REGISTRY", None)
        if registry is None:
            return None
        entry = registry.get(name)
        card = getattr(entry, "card", entry)
        family = getattr(card, "family_group", None)
    except (ImportError, CrsbenchError, AttributeError, KeyError, TypeError):
        return None
    return GROUP_OF_FAMILY.get(family) if family else None


def default_groups(encoders: Iterable[str], runs: pd.DataFrame | None = None) -> dict[str, str]:
    """``general`` / ``medical`` per encoder: from the encoder registry's cards, else from an
    ``encoder_group`` column of ``runs``; encoders found in neither are left out."""
    fallback: dict[str, str] = {}
    if runs is not None and "encoder_group" in runs:
        pairs = runs[["encoder", "encoder_group"]].dropna().drop_duplicates()
        fallback = {
            e: GROUP_OF_FAMILY.get(g, g)
            for e, g in zip(pairs["encoder"], pairs["encoder_group"], strict=True)
        }
    out = {}
    for name in encoders:
        group = _card_group(name) or fallback.get(name)
        if group is not None:
            out[name] = group
    return out


def shift_auroc_by_encoder(runs: pd.DataFrame, regime: str = "frozen") -> pd.DataFrame:
    """Per (encoder, source dataset, shift target): seed-mean AUROC on the target and on the
    source, and the drop."""
    target = select(runs, regime=regime, condition="shift", own_eval=False)
    mean = lambda s: s.mean(skipna=False)  # noqa: E731  (a NaN seed is a NaN mean, never dropped)
    source = select(runs, regime=regime).groupby(["encoder", "dataset"])["auroc"].agg(mean)
    t = target.groupby(["encoder", "dataset", "eval_dataset"])["auroc"].agg(mean).reset_index()
    t = t.rename(columns={"auroc": "shift_auroc"})
    t["source_auroc"] = [
        source.get((e, d), np.nan) for e, d in zip(t["encoder"], t["dataset"], strict=True)
    ]
    t["shift_drop"] = t["source_auroc"] - t["shift_auroc"]
    return t


def paper_shift_auroc(shift: pd.DataFrame) -> dict[str, float]:
    """Encoder → shift-target AUROC of the paper's shift (CheXpert → MIMIC-CXR) only.

    The institutional-shift test compares medical and general encoders on that target; other
    shift targets are extras, reported per target, never pooled into it.
    """
    from crsbench.core.conditions import PAPER_SHIFTS

    pairs = list(zip(shift["dataset"], shift["eval_dataset"], strict=True))
    paper = shift[[p in PAPER_SHIFTS for p in pairs]]
    return paper.groupby("encoder")["shift_auroc"].agg(lambda s: s.mean(skipna=False)).to_dict()


def shift_welch(shift_auroc: Mapping[str, float], groups: Mapping[str, str]) -> pd.DataFrame:
    """Welch t-test of shift-target AUROC, medical vs general encoders.

    Parameters
    ----------
    shift_auroc : mapping
        Encoder → AUROC on the shift target.
    groups : mapping
        Encoder → ``"medical"`` or ``"general"``; others are ignored.

    Returns
    -------
    pandas.DataFrame
        One row: group means, sizes, ``t``, ``p_value`` (two-sided, unequal variances).
    """
    med = [v for e, v in shift_auroc.items() if groups.get(e) == "medical" and np.isfinite(v)]
    gen = [v for e, v in shift_auroc.items() if groups.get(e) == "general" and np.isfinite(v)]
    row = {
        "n_medical": len(med),
        "n_general": len(gen),
        "mean_medical": float(np.mean(med)) if med else np.nan,
        "mean_general": float(np.mean(gen)) if gen else np.nan,
        "t": np.nan,
        "p_value": np.nan,
    }
    if len(med) >= 2 and len(gen) >= 2:
        res = sps.ttest_ind(med, gen, equal_var=False)
        row["t"], row["p_value"] = float(res.statistic), float(res.pvalue)
    return pd.DataFrame([row])
