"""Pretraining-contamination flags of the results, and the shift analyses without them.

A cell (encoder, dataset) is *flagged* when the encoder's pretraining data may include the
dataset (:mod:`crsbench.pretraining`: level ``trained_on`` or ``possible``). A shift
result (encoder, source → target) is flagged when its source cell or its target is: the probe
is fitted on the source and the AUROC measured on the target, so either may be inflated. The
Welch test and the external-validity correlations are then recomputed without the flagged
shift results, beside the results on every encoder.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from crsbench.pretraining import LEVEL_WORDS, PretrainingCatalog, load_pretraining
from crsbench.scoring.anchors import Anchors
from crsbench.stats.shift import (
    default_groups,
    paper_shift_auroc,
    shift_auroc_by_encoder,
    shift_welch,
)
from crsbench.stats.validity import shift_validity
from crsbench.store.stored_plan import StoredPlan

FLAG_COLUMNS: tuple[str, ...] = ("encoder", "dataset", "level", "flagged", "why",
                                 "catalogue_version")  # fmt: skip
SUBSETS: tuple[str, ...] = ("all", "without_flagged")


def contamination_flags(
    pairs: pd.DataFrame, catalog: str | PretrainingCatalog | None = None
) -> pd.DataFrame:
    """Overlap level of every (encoder, dataset) row of ``pairs``.

    Parameters
    ----------
    pairs : pandas.DataFrame
        Columns ``encoder`` and ``dataset`` (e.g. the scored cells); duplicates are dropped.
    catalog : catalogue source, optional
        Version name, YAML path or loaded catalogue; default the shipped current version.

    Returns
    -------
    pandas.DataFrame
        :data:`FLAG_COLUMNS`: the level (``trained_on``, ``possible``, ``none_known``,
        ``unknown``), ``flagged`` (the first two), why, and the catalogue version.

    Examples
    --------
    >>> t = contamination_flags(pd.DataFrame({"encoder": ["rad_dino", "mae"],
    ...                                       "dataset": ["chexpert", "chexpert"]}))
    >>> t[["encoder", "level", "flagged"]].values.tolist()
    [['rad_dino', 'trained_on', True], ['mae', 'none_known', False]]
    """
    cat = load_pretraining(catalog)
    keys = pairs[["encoder", "dataset"]].drop_duplicates().reset_index(drop=True)
    rows = []
    for enc, ds in zip(keys["encoder"], keys["dataset"], strict=True):
        ov = cat.overlap(str(enc), str(ds))
        rows.append((enc, ds, ov.level, ov.flagged, ov.why, cat.version))
    return pd.DataFrame(rows, columns=list(FLAG_COLUMNS))


def shift_flags(
    shift: pd.DataFrame, catalog: str | PretrainingCatalog | None = None
) -> pd.DataFrame:
    """``shift`` (columns ``encoder``, ``dataset``, ``eval_dataset``) with ``source_level``,
    ``target_level``, ``flagged`` (either flagged) and ``why`` added."""
    cat = load_pretraining(catalog)
    out = shift.copy()
    src = [cat.overlap(e, d) for e, d in zip(out["encoder"], out["dataset"], strict=True)]
    tgt = [cat.overlap(e, t) for e, t in zip(out["encoder"], out["eval_dataset"], strict=True)]
    out["source_level"] = [o.level for o in src]
    out["target_level"] = [o.level for o in tgt]
    out["flagged"] = [a.flagged or b.flagged for a, b in zip(src, tgt, strict=True)]
    out["why"] = [
        "; ".join(f"{name} {LEVEL_WORDS[o.level]}: {o.why}" for name, o in
                  ((d, a), (t, b)) if o.flagged)
        for d, t, a, b in zip(out["dataset"], out["eval_dataset"], src, tgt, strict=True)
    ]  # fmt: skip
    return out


def _welch(shift: pd.DataFrame, groups: Mapping[str, str]) -> pd.DataFrame:
    target = paper_shift_auroc(shift)
    return shift_welch(target, groups)


def shift_welch_without_flagged(
    runs: pd.DataFrame,
    groups: Mapping[str, str] | None = None,
    catalog: str | PretrainingCatalog | None = None,
) -> pd.DataFrame:
    """The Welch test of shift AUROC (medical vs general) on every encoder and without the
    flagged shift results.

    Parameters
    ----------
    runs : pandas.DataFrame
        A store's ``runs`` table.
    groups : mapping, optional
        Encoder → ``general`` / ``medical`` (default
        :func:`crsbench.stats.shift.default_groups`).
    catalog : catalogue source, optional
        Pretraining catalogue (default: the shipped current version).

    Returns
    -------
    pandas.DataFrame
        Two rows, ``subset`` = ``all`` and ``without_flagged``, each with the columns of
        :func:`crsbench.stats.shift.shift_welch`, and ``excluded`` (the flagged shift results
        left out, ``encoder:source→target``). Empty when the store has no shift rows.
    """
    shift = shift_auroc_by_encoder(runs)
    if shift.empty:
        return pd.DataFrame()
    flagged = shift_flags(shift, catalog)
    grp = groups if groups is not None else default_groups(sorted(shift["encoder"].unique()), runs)
    kept = flagged[~flagged["flagged"]]
    left_out = flagged[flagged["flagged"]]
    excluded = ", ".join(f"{e}:{d}→{t}" for e, d, t in
                         zip(left_out["encoder"], left_out["dataset"], left_out["eval_dataset"],
                             strict=True))  # fmt: skip
    rows = [_welch(shift, grp).assign(subset="all", excluded=""),
            _welch(kept, grp).assign(subset="without_flagged", excluded=excluded)]  # fmt: skip
    out = pd.concat(rows, ignore_index=True)
    return out[["subset", *[c for c in out if c != "subset"]]]


def _drop_flagged_shift_rows(runs: pd.DataFrame, flagged: pd.DataFrame) -> pd.DataFrame:
    """``runs`` without the shift rows of the flagged (encoder, source, target) results."""
    bad = flagged.loc[flagged["flagged"], ["encoder", "dataset", "eval_dataset"]]
    keys = set(map(tuple, bad.to_numpy()))
    hit = [
        c == "shift" and (e, d, t) in keys
        for c, e, d, t in zip(runs["condition"], runs["encoder"], runs["dataset"],
                              runs["eval_dataset"], strict=True)
    ]  # fmt: skip
    return runs.loc[~pd.Series(hit, index=runs.index, dtype=bool)]


def shift_validity_without_flagged(
    runs: pd.DataFrame,
    anchors: str | Anchors | None = None,
    catalog: str | PretrainingCatalog | None = None,
    plan: StoredPlan | None = None,
) -> pd.DataFrame:
    """External validity (:func:`crsbench.stats.validity.shift_validity`) on every encoder and
    without the flagged shift results (their shift rows are dropped, so those encoders leave
    the correlation of that source → target; the CRS predictors never use shift rows). The
    CRS is held to ``plan``, the store's recorded plan.

    Returns
    -------
    pandas.DataFrame
        The rows of ``shift_validity`` with ``subset`` = ``all`` or ``without_flagged``.
    """
    shift = shift_auroc_by_encoder(runs)
    if shift.empty:
        return pd.DataFrame()
    flagged = shift_flags(shift, catalog)
    parts = [shift_validity(runs, anchors, plan=plan).assign(subset="all")]
    parts.append(shift_validity(_drop_flagged_shift_rows(runs, flagged), anchors, plan=plan)
                 .assign(subset="without_flagged"))  # fmt: skip
    out = pd.concat([p for p in parts if not p.empty], ignore_index=True)
    return out[["subset", *[c for c in out if c != "subset"]]] if not out.empty else out


def pretraining_overlap(
    cells: pd.DataFrame,
    shift: pd.DataFrame | None = None,
    catalog: str | PretrainingCatalog | None = None,
) -> dict[str, str]:
    """Encoder → its flagged cells and shift targets, the leaderboard's marker column:
    ``"chexpert (trained on); shift target mimic_cxr (trained on)"``, empty when none is.

    Parameters
    ----------
    cells : pandas.DataFrame
        Columns ``encoder``, ``dataset`` (the scored cells).
    shift : pandas.DataFrame, optional
        Columns ``encoder``, ``eval_dataset`` (the shift results,
        :func:`crsbench.stats.shift.shift_auroc_by_encoder`).
    catalog : catalogue source, optional
        Default: the shipped current version.
    """
    cat = load_pretraining(catalog)
    parts: dict[str, list[str]] = {str(e): [] for e in cells["encoder"].unique()}
    pairs = [(e, d, "") for e, d in cells[["encoder", "dataset"]].drop_duplicates().to_numpy()]
    if shift is not None and not shift.empty:
        targets = shift[["encoder", "eval_dataset"]].drop_duplicates().to_numpy()
        pairs += [(e, t, "shift target ") for e, t in targets]
    for enc, ds, role in sorted(pairs, key=lambda p: (p[2] != "", str(p[1]))):
        ov = cat.overlap(str(enc), str(ds))
        if ov.flagged:
            parts.setdefault(str(enc), []).append(f"{role}{ds} ({LEVEL_WORDS[ov.level]})")
    return {e: "; ".join(v) for e, v in parts.items()}
