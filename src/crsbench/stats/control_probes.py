"""Control probes: do the encoder rankings hinge on the classifier?

The protocol fits two control probes beside the main logistic probe (a one-hidden-layer MLP and
kNN) to show that conclusions do not hinge on the classifier (docs/protocol.md section 6; the
analysis is listed in section 10). For every control probe in the store (every ``probe`` value
other than :data:`MAIN_PROBE`):

1. the four axes come from that probe's own rows exactly as for the logistic probe
   (:func:`~crsbench.scoring.planned.planned_axes` with ``probe=``, held to the store's
   recorded plan like the logistic probe), and the CRS from them under the
   same anchors (:func:`~crsbench.scoring.score_cells`);
2. both probes are restricted to the (encoder, dataset, seed) keys they share, so both rankings
   average the same seeds;
3. the rankings of encoders by AUROC and by CRS are compared with the logistic probe's, per
   dataset and overall (each encoder's mean over the cells that have the score under both
   probes), by Kendall tau-b, reversed pairs and rank-1 agreement
   (:func:`~crsbench.stats.agreement.rank_agreement`,
   :func:`~crsbench.stats.agreement.rank1_agreement`).

An axis that the store has no rows for under a control probe is never borrowed from the
logistic probe: the coverage table says which axes came from the control probe, and a CRS that
would need a missing axis is not computed (NaN, with the reason in ``note``).
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd

from crsbench.protocol import FROZEN
from crsbench.scoring.aggregate import score_cells
from crsbench.scoring.anchors import AXES, Anchors, load_anchors
from crsbench.scoring.axes import has_clean_row, seed_means
from crsbench.scoring.planned import planned_axes
from crsbench.stats.agreement import rank1_agreement, rank_agreement
from crsbench.store.reader import MAIN_PROBE  # every other probe is a control probe
from crsbench.store.stored_plan import StoredPlan

#: ``dataset`` value of the rows that compare the encoders' means over all their cells.
OVERALL = "overall"
#: Ranking name → column of the per-cell table it ranks by.
RANKINGS: dict[str, str] = {"auroc": "auroc", "crs": "CRS"}
AGREEMENT_COLUMNS: tuple[str, ...] = (
    "probe", "dataset", "ranking", "kendall_tau", "reversed_pairs", "n_pairs", "rank1_agrees",
    "logistic_rank1", "probe_rank1", "n_encoders", "n_cells", "note",
)  # fmt: skip
COVERAGE_COLUMNS: tuple[str, ...] = (
    "probe", "axis", "n_cells_probe", "n_cells_logistic", "from_probe", "note",
)  # fmt: skip
#: The rows each axis is computed from (named in the note when a probe has none).
AXIS_ROWS: dict[str, str] = {
    "auroc": "clean rows at 100 % labels",
    "ece": "clean rows at 100 % labels",
    "retention": "clean rows below 100 % labels",
    "robustness_drop": "perturbed or shift rows at 100 % labels",
}
_KEYS = ["encoder", "dataset", "seed"]
_CELL = ["encoder", "dataset"]


def control_probe_names(runs: pd.DataFrame, regime: str = FROZEN) -> list[str]:
    """The control probes with rows in ``regime`` (every probe but :data:`MAIN_PROBE`), sorted."""
    rows = runs.loc[(runs["regime"] == regime) & (runs["probe"] != MAIN_PROBE), "probe"]
    return sorted(str(p) for p in rows.unique())


def probe_cells(per_seed: pd.DataFrame, anchors: Anchors) -> pd.DataFrame:
    """Seed means of the axes per (encoder, dataset), with the ``CRS`` of every cell that has
    all four axes (NaN otherwise)."""
    means = seed_means(per_seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # incomplete cells: reported by coverage
        scored = score_cells(per_seed, anchors)
    crs = scored[[*_CELL, "CRS"]] if not scored.empty else pd.DataFrame(columns=[*_CELL, "CRS"])
    out = means.merge(crs, on=_CELL, how="left")
    out["CRS"] = out["CRS"].astype(float)
    return out


def axis_coverage(probe: str, ctrl: pd.DataFrame, main: pd.DataFrame) -> pd.DataFrame:
    """Per axis: in how many cells the control probe and the logistic probe have it.

    ``ctrl`` and ``main`` are the :func:`~crsbench.scoring.seed_means` of each probe's axes
    over all its rows in the store.

    ``from_probe`` is true when the control probe has the axis in at least one cell; the
    ``note`` says what is missing (an axis is never taken from the logistic probe instead).
    """
    rows = []
    for axis in AXES:
        n_ctrl, n_main = int(ctrl[axis].notna().sum()), int(main[axis].notna().sum())
        if n_ctrl == 0:
            note = f"not computed: the store has no {probe} {AXIS_ROWS[axis]}"
        elif n_ctrl < n_main:
            note = f"in only {n_ctrl} of the {n_main} cells that the {MAIN_PROBE} probe has"
        else:
            note = ""
        rows.append((probe, axis, n_ctrl, n_main, n_ctrl > 0, note))
    return pd.DataFrame(rows, columns=list(COVERAGE_COLUMNS))


def _crs_reason(probe: str, coverage: pd.DataFrame) -> str:
    absent = coverage.loc[~coverage["from_probe"], "axis"].tolist()
    if not absent:
        return f"CRS under {probe} not computed: no cell has all four axes under {probe}"
    return f"CRS under {probe} not computed: the store has no {probe} rows for " + ", ".join(
        f"{a} ({AXIS_ROWS[a]})" for a in absent
    )


def _compare(main: pd.Series, ctrl: pd.Series, n_cells: int, why_missing: str) -> dict[str, object]:
    """One agreement row (without probe/dataset/ranking) of two encoder → score series."""
    row: dict[str, object] = dict.fromkeys(AGREEMENT_COLUMNS[3:], np.nan)
    both = main.notna() & ctrl.reindex(main.index).notna()
    names = main.index[both]
    row.update(n_encoders=len(names), n_cells=n_cells, note="")
    if len(names) < 2:
        row["note"] = why_missing
        return row
    a, b = main[names].to_dict(), ctrl[names].to_dict()
    stats, top = rank_agreement(a, b), rank1_agreement(a, b)
    row.update(
        kendall_tau=stats["kendall_tau"],
        reversed_pairs=stats["reversed_pairs"],
        n_pairs=stats["n_pairs"],
        rank1_agrees=top["rank1_agrees"],
        logistic_rank1=top["rank1_a"],
        probe_rank1=top["rank1_b"],
    )
    if not np.isfinite(stats["kendall_tau"]):
        row["note"] = "Kendall tau is undefined: every encoder is tied in one of the rankings"
    return row


def _ranking_rows(
    probe: str, main: pd.DataFrame, ctrl: pd.DataFrame, crs_reason: str
) -> list[dict[str, object]]:
    """Per dataset and overall, for each ranking: the agreement row."""
    joined = main.merge(ctrl, on=_CELL, how="outer", suffixes=("_main", "_ctrl"))
    rows = []
    for ranking, col in RANKINGS.items():
        a, b = f"{col}_main", f"{col}_ctrl"
        usable = joined[joined[a].notna() & joined[b].notna()]
        why = (
            f"fewer than 2 encoders are scored by {ranking.upper()} under both {MAIN_PROBE} "
            f"and {probe}"
        )
        if ranking == "crs" and ctrl["CRS"].isna().all():
            why = crs_reason
        for ds in sorted(joined["dataset"].unique()):
            kept = joined[joined["dataset"] == ds].set_index("encoder")
            n = int((kept[a].notna() & kept[b].notna()).sum())
            rows.append({"probe": probe, "dataset": str(ds), "ranking": ranking,
                         **_compare(kept[a], kept[b], n, why)})  # fmt: skip
        means = usable.groupby("encoder")[[a, b]].mean()
        rows.append({"probe": probe, "dataset": OVERALL, "ranking": ranking,
                     **_compare(means[a], means[b], len(usable), why)})  # fmt: skip
    return rows


def _note_dropped_keys(coverage: pd.DataFrame, probe: str, dropped: int, kept: int) -> None:
    """Say, on the ``auroc`` row (the clean full-label rows that define a key), how many
    (encoder, dataset, seed) keys only one of the two probes has."""
    at = coverage.index[coverage["axis"] == "auroc"][0]
    text = (
        f"{dropped} (encoder, dataset, seed) keys have a clean full-label row under only one of "
        f"{MAIN_PROBE} and {probe}; both probes are compared on the {kept} shared keys"
    )
    before = coverage.at[at, "note"]
    coverage.at[at, "note"] = f"{before}; {text}" if before else text


def _held(per_seed: pd.DataFrame) -> pd.DataFrame:
    """The (encoder, dataset, seed) keys that have a clean full-label row under the probe."""
    return per_seed[has_clean_row(per_seed)]


def _shared(main_ps: pd.DataFrame, ctrl_ps: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    common = main_ps[_KEYS].merge(ctrl_ps[_KEYS]).drop_duplicates()
    return main_ps.merge(common, on=_KEYS), ctrl_ps.merge(common, on=_KEYS)


def control_probe_agreement(
    runs: pd.DataFrame,
    anchors: str | Anchors | None = None,
    regime: str = FROZEN,
    plan: StoredPlan | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Compare the encoder rankings under each control probe with the logistic probe's.

    Parameters
    ----------
    runs : pandas.DataFrame
        A store's ``runs`` table.
    anchors : anchors source, optional
        Anchors of every CRS (default: the shipped current version).
    regime : str
        The regime whose rows are compared (control probes are fitted on frozen features).
    plan : StoredPlan, optional
        The store's recorded plan: what each cell must hold under every probe (a planned
        shift target that no cell evaluated makes R, hence the CRS, NaN under both probes).

    Returns
    -------
    agreement : pandas.DataFrame
        One row per (probe, dataset or ``"overall"``, ranking ``auroc``/``crs``), columns
        :data:`AGREEMENT_COLUMNS`; statistics are NaN (and ``note`` says why) where fewer than
        two encoders have the score under both probes. ``n_cells`` counts the cells compared.
    coverage : pandas.DataFrame
        One row per (probe, axis), columns :data:`COVERAGE_COLUMNS`; ``note`` also names the
        (encoder, dataset, seed) keys left out because only one probe has them.
    """
    anc = load_anchors(anchors)
    return _agreement(runs, anc, regime, plan)


def _agreement(
    runs: pd.DataFrame, anc: Anchors, regime: str, plan: StoredPlan | None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`control_probe_agreement` itself."""
    main_ps = _held(planned_axes(runs, plan, regime, probe=MAIN_PROBE))
    agreement: list[dict[str, object]] = []
    coverage: list[pd.DataFrame] = []
    for probe in control_probe_names(runs, regime):
        ctrl_ps = _held(planned_axes(runs, plan, regime, probe=probe))
        main_sh, ctrl_sh = _shared(main_ps, ctrl_ps)
        main, ctrl = probe_cells(main_sh, anc), probe_cells(ctrl_sh, anc)
        cov = axis_coverage(probe, seed_means(ctrl_ps), seed_means(main_ps))
        dropped = len(main_ps) + len(ctrl_ps) - 2 * len(main_sh)
        if dropped:
            _note_dropped_keys(cov, probe, dropped, len(main_sh))
        coverage.append(cov)
        agreement.extend(_ranking_rows(probe, main, ctrl, _crs_reason(probe, cov)))
    if not coverage:
        empty = pd.DataFrame(columns=list(AGREEMENT_COLUMNS))
        return empty, pd.DataFrame(columns=list(COVERAGE_COLUMNS))
    table = pd.DataFrame(agreement, columns=list(AGREEMENT_COLUMNS))
    table = table.astype({"reversed_pairs": "Int64", "n_pairs": "Int64", "rank1_agrees": "boolean"})
    return table, pd.concat(coverage, ignore_index=True)


#: Readable names of the control probes (a probe without one is shown by its store name).
PROBE_LABELS: dict[str, str] = {"mlp": "MLP", "knn": "kNN"}


def probe_labels(meta: dict) -> dict[str, str]:
    """Readable probe names, with kNN's k from the store's resolved config when recorded."""
    labels = dict(PROBE_LABELS)
    try:
        k = json.loads(meta.get("config_json") or "{}")["probes"]["knn"]["k"]
    except (ValueError, KeyError, TypeError):
        return labels
    labels["knn"] = f"kNN-{k}"
    return labels


def _clause(row: pd.Series) -> str:
    """``"has Kendall tau 0.82 with the logistic probe's, 2 of 28 pairs reversed, same rank-1
    encoder (a)"``, or ``"is not compared (reason)"``."""
    if pd.isna(row["n_pairs"]) or pd.isna(row["kendall_tau"]):
        return f"is not compared ({row['note']})"
    top = (
        f"the same rank-1 encoder ({row['logistic_rank1']})"
        if bool(row["rank1_agrees"])
        else f"a different rank-1 encoder ({row['probe_rank1']} instead of {row['logistic_rank1']})"
    )
    return (
        f"has Kendall tau {row['kendall_tau']:.2f} with the {MAIN_PROBE} probe's, "
        f"{int(row['reversed_pairs'])} of {int(row['n_pairs'])} pairs reversed, {top}"
    )


def probe_sentence(agreement: pd.DataFrame, probe: str, label: str | None = None) -> str:
    """One sentence on the overall AUROC and CRS rankings under ``probe`` vs the logistic one.

    Example: "Under kNN, the overall AUROC ranking of 8 encoders has Kendall tau 0.82 with the
    logistic probe's, 2 of 28 pairs reversed, the same rank-1 encoder (enc3); the CRS ranking
    is not compared (CRS under knn not computed: ...)."
    """
    rows = agreement[(agreement["probe"] == probe) & (agreement["dataset"] == OVERALL)]
    by = {r["ranking"]: r for _, r in rows.iterrows()}
    name = label or PROBE_LABELS.get(probe, probe)
    auroc, crs = by["auroc"], by["crs"]
    return (
        f"Under {name}, the overall AUROC ranking of {int(auroc['n_encoders'])} encoders "
        f"{_clause(auroc)}; the CRS ranking {_clause(crs)}."
    )


def _plain(value: object) -> object:
    """JSON-ready scalar: NA/NaN → None, numpy scalars → Python."""
    if value is None or value is pd.NA or (isinstance(value, float) and not np.isfinite(value)):
        return None
    return value.item() if isinstance(value, np.generic) else value


def agreement_headline(agreement: pd.DataFrame, coverage: pd.DataFrame) -> dict[str, object]:
    """JSON-ready summary per probe: the overall rows, the sentence, the axes it supplied."""
    out: dict[str, object] = {}
    for probe in agreement["probe"].unique():
        rows = agreement[(agreement["probe"] == probe) & (agreement["dataset"] == OVERALL)]
        cov = coverage[coverage["probe"] == probe]
        out[str(probe)] = {
            "overall": {
                r["ranking"]: {c: _plain(r[c]) for c in AGREEMENT_COLUMNS[3:]}
                for _, r in rows.iterrows()
            },
            "axes_from_probe": cov.loc[cov["from_probe"], "axis"].tolist(),
            "axes_not_computed": {
                str(r["axis"]): str(r["note"]) for _, r in cov[~cov["from_probe"]].iterrows()
            },
            "sentence": probe_sentence(agreement, str(probe)),
        }
    return out
