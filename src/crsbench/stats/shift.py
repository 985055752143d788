"""Institutional shift: shift-target AUROC and drop per encoder and target, and medical vs
general encoders (Welch t-test) per target."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd
from scipy import stats as sps

from crsbench.core.shift_labels import compared_labels, source_reference
from crsbench.protocol import COMPARISON_GROUP, FROZEN
from crsbench.store.cards import ENCODER_GROUP_COLUMN, NO_CARDS_NOTE
from crsbench.store.reader import select_runs


def default_groups(encoders: Iterable[str], runs: pd.DataFrame | None = None) -> dict[str, str]:
    """``general`` / ``medical`` per encoder, from the ``encoder_group`` column of ``runs``
    (the family group of each encoder's card, recorded in the store by the pipeline and added
    by :func:`crsbench.store.load_runs`).

    Encoders without a group are left out, with a warning that names them (a store written
    before the groups were recorded has no such column: :data:`crsbench.store.cards.NO_CARDS_NOTE`).
    """
    names = list(encoders)
    found: dict[str, str] = {}
    if runs is not None and ENCODER_GROUP_COLUMN in runs:
        pairs = runs[["encoder", ENCODER_GROUP_COLUMN]].dropna().drop_duplicates("encoder")
        found = dict(zip(pairs["encoder"], pairs[ENCODER_GROUP_COLUMN], strict=True))
    out = {n: COMPARISON_GROUP.get(found[n], found[n]) for n in names if n in found}
    missing = [n for n in names if n not in out]
    if missing:
        why = (
            NO_CARDS_NOTE
            if runs is None or ENCODER_GROUP_COLUMN not in runs
            else ("their family group is not recorded in the store")
        )
        warnings.warn(
            f"encoders {missing} are left out of the medical-vs-general comparison: {why}.",
            UserWarning, stacklevel=2,
        )  # fmt: skip
    return out


def shift_auroc_by_encoder(runs: pd.DataFrame, regime: str = FROZEN) -> pd.DataFrame:
    """Per (encoder, source dataset, shift target): seed-mean AUROC on the target, the
    source's clean AUROC it is compared with, and the drop.

    The source AUROC of a target that provides fewer labels than the source is the one its
    records carry (the source's clean AUROC on the compared labels, see
    :mod:`crsbench.core.shift_labels`), else the source's clean AUROC, seed by seed; the
    columns ``compared_labels`` (``all`` or the names) and ``n_seeds`` say which.
    """
    target = select_runs(runs, regime=regime, condition="shift", own_eval=False)
    cols = ["encoder", "dataset", "eval_dataset", "shift_auroc", "source_auroc", "shift_drop",
            "compared_labels", "n_seeds"]  # fmt: skip
    if target.empty:
        return pd.DataFrame(columns=cols)
    clean = select_runs(runs, regime=regime).groupby(["encoder", "dataset", "seed"])["auroc"].mean()
    details = target["details"] if "details" in target else pd.Series(None, index=target.index)
    refs = [source_reference(d) for d in details]
    labels = [compared_labels(d) for d in details]
    own = [clean.get((e, d, s), np.nan) for e, d, s in
           zip(target["encoder"], target["dataset"], target["seed"], strict=True)]  # fmt: skip
    t = target[["encoder", "dataset", "eval_dataset", "seed", "auroc"]].copy()
    t["source_auroc"] = [o if r is None else r for o, r in zip(own, refs, strict=True)]
    t["compared_labels"] = labels
    g = t.groupby(["encoder", "dataset", "eval_dataset"], sort=True)
    out = g[["auroc", "source_auroc"]].agg(lambda s: s.mean(skipna=False)).reset_index()
    out = out.rename(columns={"auroc": "shift_auroc"})
    out["shift_drop"] = out["source_auroc"] - out["shift_auroc"]
    out["compared_labels"] = g["compared_labels"].first().to_numpy()
    out["n_seeds"] = g["seed"].nunique().to_numpy()
    return out[cols]


def paper_shift_auroc(shift: pd.DataFrame) -> dict[str, float]:
    """Encoder → shift-target AUROC of the paper's shift (CheXpert → MIMIC-CXR) only.

    The institutional-shift test compares medical and general encoders on that target; other
    shift targets are extras, reported per target, never pooled into it.
    """
    from crsbench.protocol import PAPER_SHIFTS

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
        Encoder → ``"medical"`` or ``"general"``; others (``"baseline"``: the pixel,
        random-weight and ImageNet-lite baselines) are left out of both groups.

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


def shift_welch_by_target(
    shift: pd.DataFrame, groups: Mapping[str, str], value: str = "shift_auroc"
) -> pd.DataFrame:
    """:func:`shift_welch` for each (source, shift target) of :func:`shift_auroc_by_encoder`.

    Returns
    -------
    pandas.DataFrame
        ``source``, ``target``, then the columns of :func:`shift_welch` (medical vs general
        encoders' ``value``, Welch t-test); one row per target, in name order.
    """
    rows = []
    for (source, target), grp in shift.groupby(["dataset", "eval_dataset"], sort=True):
        test = shift_welch(dict(zip(grp["encoder"], grp[value], strict=True)), groups)
        rows.append({"source": source, "target": target, **test.iloc[0].to_dict()})
    return pd.DataFrame(rows)


def shift_drop_matrix(shift: pd.DataFrame) -> pd.DataFrame:
    """The shift drop as an encoder × ``source→target`` table (from
    :func:`shift_auroc_by_encoder`): rows are encoders, columns are shifts, NaN where a
    pair was not evaluated."""
    wide = shift.assign(shift=shift["dataset"] + "→" + shift["eval_dataset"])
    return wide.pivot(index="encoder", columns="shift", values="shift_drop").sort_index()
