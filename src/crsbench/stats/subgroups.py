"""Subgroups: AUROC, ECE and the robustness drop R per subgroup the stored metadata carries
(sex, age band, view, anatomical site), the worst subgroup and the gap per encoder, with the
test-patient bootstrap's intervals (``docs/scoring.md``, "Subgroups, operating points, flips").

Every replicate resamples the test patients with :func:`crsbench.stats.resample.row_weights`
(the same patients for every encoder: paired), and a subgroup's value in a replicate is the
metric on its rows with those weights. Intervals are percentile intervals of the replicates.
A subgroup with fewer than ``min_patients`` distinct patients is ``too small``: its values are
NaN and it never enters the worst subgroup or the gap.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from crsbench.stats.cell_predictions import CellPredictions, EvalSplit
from crsbench.stats.intervals import percentile_interval
from crsbench.stats.resample import replicate_ids, row_weights
from crsbench.stats.shared import shared_on
from crsbench.stats.weighted_metrics import weighted_ece, weighted_macro_auroc

#: Age bands in years: (lower bound inclusive, upper bound exclusive, name).
AGE_BANDS: tuple[tuple[float, float, str], ...] = (
    (0.0, 40.0, "<40"),
    (40.0, 60.0, "40-59"),
    (60.0, 80.0, "60-79"),
    (80.0, float("inf"), "80+"),
)
#: Fewest distinct patients a subgroup needs to be reported as a number.
MIN_SUBGROUP_PATIENTS = 30
#: Bootstrap replicates of the subgroup intervals (the CLI passes ``--replicates``).
DEFAULT_SUBGROUP_REPLICATES = 200
TOO_SMALL = "too small"
#: The axes read per subgroup, and whether their worst value is the largest.
WORST_IS_MAX: dict[str, bool] = {"auroc": False, "ece": True, "robustness_drop": True}

Metric = Callable[[np.ndarray, np.ndarray, str, np.ndarray], np.ndarray]


def age_band(ages: np.ndarray) -> np.ndarray:
    """The :data:`AGE_BANDS` name of each age (str years; blank or unparseable → blank)."""
    years = pd.to_numeric(pd.Series(np.asarray(ages, dtype=str)), errors="coerce").to_numpy()
    out = np.full(len(years), "", dtype=object)
    for lo, hi, name in AGE_BANDS:
        out[(years >= lo) & (years < hi)] = name
    return out.astype(str)


def subgroup_labels(split: EvalSplit) -> dict[str, np.ndarray]:
    """Attribute → subgroup of each row of ``split`` (ages banded; blank = not recorded)."""
    out = {}
    for attr, vals in split.metadata.items():
        out["age_band" if attr == "age" else attr] = (
            age_band(vals) if attr == "age" else np.asarray(vals, dtype=str)
        )
    return out


def _seed_mean(metric: Metric, y, prob, task, w) -> np.ndarray:
    """The metric for each row of ``w``, averaged over seeds when ``prob`` is ``(S, n, K)``."""
    if prob.ndim == 2:
        return metric(y, prob, task, w)
    return np.mean([metric(y, p, task, w) for p in prob], axis=0)


def _auc(split: EvalSplit, prob: np.ndarray, task: str, rows: np.ndarray, w) -> np.ndarray:
    """``(1 + B,)`` seed-mean AUROC of ``rows`` of ``split`` (point first, then replicates)."""
    ww = np.vstack([np.ones(len(rows)), w[:, rows]])
    return _seed_mean(weighted_macro_auroc, split.y[rows], prob[..., rows, :], task, ww)


@dataclass(frozen=True)
class _Ctx:
    """One cell's resampling: test weights, each shift target's weights and subgroups."""

    cell: CellPredictions
    w: np.ndarray
    targets: list[tuple[EvalSplit, np.ndarray, np.ndarray, dict[str, np.ndarray]]]
    min_patients: int
    overall: dict[str, np.ndarray] = field(default_factory=dict)  # cell drop per target


def _context(cell: CellPredictions, n_rep: int, seed: int, min_patients: int) -> _Ctx:
    ids = replicate_ids(n_rep)
    w = row_weights(cell.dataset, cell.test.groups, ids, seed)
    targets = [(split, prob, row_weights(split.dataset, split.groups, ids, seed),
                subgroup_labels(split)) for split, prob in cell.shifts]  # fmt: skip
    return _Ctx(cell, w, targets, min_patients)


def _shift_drop(ctx: _Ctx, attr: str, value: str, auc: np.ndarray, split, prob, wt, labs):
    """The subgroup's drop to one shift target: its clean AUROC minus the same subgroup's
    AUROC on the target; where the target lacks the subgroup (or it is too small there), the
    cell's overall drop to that target. Returns (drop, whether it is the subgroup's own)."""
    lab = labs.get(attr)
    rows = np.flatnonzero(lab == value) if lab is not None else np.array([], dtype=int)
    if len(np.unique(split.groups[rows])) >= ctx.min_patients:
        return auc - _auc(split, prob, ctx.cell.task, rows, wt), True
    return _overall_drop(ctx, split, prob, wt), False


def _overall_drop(ctx: _Ctx, split: EvalSplit, prob: np.ndarray, wt) -> np.ndarray:
    """The cell's whole-test-set drop to one target: the same for every subgroup, so
    computed once per cell and target."""
    if split.dataset not in ctx.overall:
        all_test = np.arange(len(ctx.cell.test.groups))
        clean = _auc(ctx.cell.test, ctx.cell.clean, ctx.cell.task, all_test, ctx.w)
        target = _auc(split, prob, ctx.cell.task, np.arange(len(split.groups)), wt)
        ctx.overall[split.dataset] = clean - target
    return ctx.overall[split.dataset]


def _values(ctx: _Ctx, attr: str, value: str, rows: np.ndarray) -> dict[str, np.ndarray]:
    """``(1 + B,)`` AUROC, ECE and R (the protocol's 0.5 · mean + 0.5 · max of the drops) on
    ``rows``, point first; ``shift_own``: how many shift drops are the subgroup's own."""
    cell, w = ctx.cell, ctx.w
    y, task = cell.test.y[rows], cell.task
    ww = np.vstack([np.ones(len(rows)), w[:, rows]])
    auc = _auc(cell.test, cell.clean, task, rows, w)
    ece = _seed_mean(weighted_ece, y, cell.clean[..., rows, :], task, ww)
    drops = [auc - _auc(cell.test, p, task, rows, w) for _, p in sorted(cell.conditions.items())]
    own = 0
    for split, prob, wt, labs in ctx.targets:
        drop, mine = _shift_drop(ctx, attr, value, auc, split, prob, wt, labs)
        drops.append(drop)
        own += int(mine)
    if drops:
        stack = np.stack(drops, axis=-1)
        r = 0.5 * stack.mean(axis=-1) + 0.5 * stack.max(axis=-1)
    else:
        r = np.full(len(ww), np.nan)
    return {"auroc": auc, "ece": ece, "robustness_drop": r, "shift_own": own}


def _cell_subgroups(ctx: _Ctx, level: float) -> tuple[list[dict], dict]:
    cell, rows, reps = ctx.cell, [], {}
    for attr, lab in subgroup_labels(cell.test).items():
        for value in sorted(set(lab) - {""}):
            idx = np.flatnonzero(lab == value)
            n_pat = len(np.unique(cell.test.groups[idx]))
            row = {"encoder": cell.encoder, "dataset": cell.dataset, "attribute": attr,
                   "subgroup": value, "n_images": len(idx), "n_patients": n_pat}  # fmt: skip
            if n_pat < ctx.min_patients:
                rows.append({**row, "status": TOO_SMALL})
                continue
            vals = _values(ctx, attr, value, idx)
            row.update(status="ok", shift_drops_own=vals.pop("shift_own"),
                       shift_targets=len(ctx.targets))  # fmt: skip
            reps[(attr, value)] = vals
            for name, v in vals.items():
                lo, hi = percentile_interval(v[1:], level)
                row.update({name: float(v[0]), f"{name}_lo": lo, f"{name}_hi": hi})
            rows.append(row)
    return rows, reps


def _extreme(m: np.ndarray, worst_is_max: bool) -> tuple[np.ndarray, np.ndarray, int]:
    """Worst value per column of ``m`` (G, 1 + B), the gap, and the worst row at the point."""
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN replicate columns
        worst = np.nanmax(m, 0) if worst_is_max else np.nanmin(m, 0)
        gap = np.nanmax(m, 0) - np.nanmin(m, 0)
    at = 0
    if np.isfinite(m[:, 0]).any():
        at = int(np.nanargmax(m[:, 0]) if worst_is_max else np.nanargmin(m[:, 0]))
    return worst, gap, at


def _worst(cell, reps, level) -> list[dict]:
    """Worst subgroup and gap per attribute: lowest AUROC, highest ECE and R."""
    out = []
    for attr in sorted({a for a, _ in reps}):
        names = [v for a, v in reps if a == attr]
        for metric, worst_is_max in WORST_IS_MAX.items():
            m = np.stack([reps[(attr, v)][metric] for v in names])  # (G, 1 + B)
            worst, gap, at = _extreme(m, worst_is_max)
            wlo, whi = percentile_interval(worst[1:], level)
            glo, ghi = percentile_interval(gap[1:], level)
            out.append({"encoder": cell.encoder, "dataset": cell.dataset, "attribute": attr,
                        "metric": metric, "n_subgroups": len(names),
                        "worst_subgroup": names[at], "worst": float(worst[0]),
                        "worst_lo": wlo, "worst_hi": whi, "gap": float(gap[0]),
                        "gap_lo": glo, "gap_hi": ghi})  # fmt: skip
    return out


def _worst_axes(reps: dict) -> dict[str, tuple[np.ndarray, str]]:
    """Per axis, the worst over every reported subgroup of every attribute: ``(1 + B,)``
    values and the point's worst subgroup as ``attribute=value``."""
    keys = list(reps)
    out = {}
    for metric, worst_is_max in WORST_IS_MAX.items():
        worst, _, at = _extreme(np.stack([reps[k][metric] for k in keys]), worst_is_max)
        out[metric] = (worst, f"{keys[at][0]}={keys[at][1]}")
    return out


@dataclass(frozen=True)
class SubgroupResult:
    """What :func:`subgroup_analysis` returns.

    Attributes
    ----------
    subgroups : pandas.DataFrame
        One row per (encoder, dataset, attribute, subgroup).
    worst : pandas.DataFrame
        One row per (encoder, dataset, attribute, metric): the worst subgroup and the gap.
    axes : dict
        (encoder, dataset) → axis → (``(1 + B,)`` worst value over every reported subgroup of
        every attribute, point first; ``attribute=value`` of the point's worst subgroup).
        Cells without a reported subgroup are absent.
    """

    subgroups: pd.DataFrame
    worst: pd.DataFrame
    axes: dict[tuple[str, str], dict[str, tuple[np.ndarray, str]]]


def subgroup_analysis(
    cells: Mapping[tuple[str, str], CellPredictions],
    *,
    min_patients: int = MIN_SUBGROUP_PATIENTS,
    n_replicates: int = DEFAULT_SUBGROUP_REPLICATES,
    seed: int = 0,
    level: float = 0.95,
) -> SubgroupResult:
    """Per-subgroup AUROC, ECE and robustness drop R, and the worst subgroup and gap.

    Parameters
    ----------
    cells : mapping (encoder, dataset) → CellPredictions
        Read by :func:`crsbench.stats.store_predictions.load_store_predictions`; the test
        split's ``metadata`` holds the subgroup attributes (a shift target's, the same
        attributes on its rows).
    min_patients : int
        Fewest distinct patients a subgroup needs; smaller ones are ``too small`` (NaN).
    n_replicates, seed, level
        The paired test-patient bootstrap of the intervals.

    Returns
    -------
    SubgroupResult
        ``subgroups``: ``status``, sizes, ``auroc``/``ece``/``robustness_drop`` and their
        ``_lo``/``_hi``, and ``shift_drops_own`` (of the ``shift_targets`` drops inside R, how
        many are the subgroup's own; the others are the cell's overall drop). ``worst``: the
        worst subgroup per attribute (lowest AUROC, highest ECE or R), its value and the gap
        (best − worst, ≥ 0), each with its interval. ``axes``: the worst over all attributes.
    """
    params = (min_patients, n_replicates, seed, level)
    compute = lambda: _analysis(cells, *params)  # noqa: E731
    return shared_on("subgroup_analysis", cells, params, compute)


def _analysis(
    cells: Mapping[tuple[str, str], CellPredictions],
    min_patients: int,
    n_replicates: int,
    seed: int,
    level: float,
) -> SubgroupResult:
    """:func:`subgroup_analysis` itself (computed once per loaded predictions and settings
    inside :func:`crsbench.stats.shared.sharing_results`)."""
    sub, worst, axes = [], [], {}
    for key, cell in cells.items():
        ctx = _context(cell, n_replicates, seed, min_patients)
        rows, reps = _cell_subgroups(ctx, level)
        sub += rows
        worst += _worst(cell, reps, level)
        if reps:
            axes[key] = _worst_axes(reps)
    table = pd.DataFrame(sub)
    for name in (*WORST_IS_MAX, *(f"{m}_{e}" for m in WORST_IS_MAX for e in ("lo", "hi"))):
        if not table.empty and name not in table:
            table[name] = np.nan  # every subgroup too small: the columns, all NaN
    return SubgroupResult(table, pd.DataFrame(worst), axes)
