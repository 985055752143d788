"""Subgroups: AUROC, ECE and the robustness drop R per subgroup the stored metadata carries
(sex, age band, view, anatomical site), the worst subgroup, the gap and whether it is real
(``docs/scoring.md``, "Subgroups, operating points, flips").

Every replicate resamples the test patients (:func:`crsbench.stats.resample.resample_counts_for`,
the same patients for every encoder: paired), and a subgroup's value in a replicate is the
metric on its rows with those weights; beside each subgroup value is the percentile spread of
the replicates, shown as a bootstrap range (not shown to cover on planted truth, so never
called a 95 % CI). A subgroup with fewer than ``min_patients`` distinct patients is ``too
small``: its values are NaN and it never enters the worst subgroup or the gap; below
``min_ece_patients`` its ECE is NaN. The worst subgroup and the gap read the debiased ECE.
A gap is called real only by the permutation test of subgroup labels
(:mod:`crsbench.stats.subgroup_tests`, false-positive rate ≤ 5 % with identical subgroups);
the gap is reported bias-corrected. The worst value's bootstrap range is not a confidence
interval (the worst of noisy values is biased; ``benchmarks/subgroups.py``).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from crsbench.core.workers import check_jobs
from crsbench.protocol import (  # defined once there
    MIN_ECE_SUBGROUP_PATIENTS,
    MIN_SUBGROUP_PATIENTS,
)
from crsbench.stats.cell_pool import map_cells
from crsbench.stats.cell_predictions import CellPredictions
from crsbench.stats.intervals import percentile_interval
from crsbench.stats.subgroup_resampling import (
    CellResampling,
    SplitResampling,
    cell_resampling,
    n_patients,
    own_rows,
)
from crsbench.stats.subgroup_tests import (
    ALPHA,
    DEFAULT_SUBGROUP_PERMUTATIONS,
    bias_corrected_gap,
    gaps,
    membership_weights,
    permutation_p_value,
    permuted_labels,
)
from crsbench.stats.subgroup_values import ShiftTerm, auroc_on, values_on

#: Bootstrap replicates of the subgroup intervals (the CLI passes ``--replicates``).
DEFAULT_SUBGROUP_REPLICATES = 200
TOO_SMALL = "too small"
#: The axes read per subgroup, and whether their worst value is the largest.
WORST_IS_MAX: dict[str, bool] = {"auroc": False, "ece": True, "robustness_drop": True}
#: The value the worst subgroup, the gap and the test read per axis (ECE: debiased).
SELECT_ON: dict[str, str] = {"auroc": "auroc", "ece": "ece_debiased",
                             "robustness_drop": "robustness_drop"}  # fmt: skip


def _boot_values(
    ctx: CellResampling, attr: str, value: str, rows: np.ndarray
) -> dict[str, np.ndarray]:
    """``(1 + B,)`` AUROC, ECE, debiased ECE and R of the subgroup ``rows`` (point first);
    ``shift_own``: how many shift drops are the subgroup's own. ECE is NaN below
    ``min_ece_patients``."""
    shifts, own = [], 0
    for t in ctx.targets:
        trows = own_rows(ctx, t, attr, value)
        if trows is None:
            shifts.append(ShiftTerm(np.nan, False, ctx.overall_drop(t)))
        else:
            tauc = auroc_on(ctx.cell, t.split, t.prob, trows, t.weights(trows))
            shifts.append(ShiftTerm(tauc, True, np.nan))
            own += 1
    vals: dict = values_on(ctx.cell, rows, ctx.test.weights(rows), shifts)
    if n_patients(ctx.test.split, rows) < ctx.min_ece_patients:
        vals["ece"] = vals["ece_debiased"] = np.full(len(vals["ece"]), np.nan)
    vals["shift_own"] = own
    return vals


def _perm_shift(ctx: CellResampling, t: SplitResampling, attr: str, names: list[str]) -> ShiftTerm:
    """Target ``t``'s term of R for every (subgroup, reassignment): the target's own labels
    reassigned among its patients (an independent stream), or the cell's overall drop."""
    lab = t.labels.get(attr)
    overall = float(ctx.overall_drop(t)[0])
    own = [lab is not None and own_rows(ctx, t, attr, v) is not None for v in names]
    if not any(own):
        return ShiftTerm(np.nan, False, overall)
    perm = permuted_labels(lab, t.split.groups, ctx.n_permutations, ctx.seed,
                           f"{t.split.dataset}|{attr}")  # fmt: skip
    uniq = list(np.unique(np.asarray(lab).astype(str)))
    codes = [uniq.index(v) if v in uniq else -1 for v in names]
    rows = np.arange(len(t.inverse))
    tauc = auroc_on(
        ctx.cell, t.split, t.prob, rows, membership_weights(perm, codes, t.split.groups)
    )
    return ShiftTerm(tauc, np.repeat(own, ctx.n_permutations + 1), overall)


def _perm_values(ctx: CellResampling, attr: str, names: list[str]) -> dict[str, np.ndarray]:
    """``(G, 1 + P)`` AUROC, debiased ECE and R of the reported subgroups ``names`` of
    ``attr`` under the observed labels (column 0) and each reassignment."""
    lab, split = ctx.test.labels[attr], ctx.test.split
    perm = permuted_labels(lab, split.groups, ctx.n_permutations, ctx.seed,
                           f"{split.dataset}|{attr}")  # fmt: skip
    uniq = list(np.unique(lab))
    w = membership_weights(perm, [uniq.index(v) for v in names], split.groups)
    shifts = [_perm_shift(ctx, t, attr, names) for t in ctx.targets]
    vals = values_on(ctx.cell, np.arange(len(lab)), w, shifts, plug_in=False)
    out = {k: v.reshape(len(names), -1) for k, v in vals.items()}
    small = [n_patients(split, np.flatnonzero(lab == v)) < ctx.min_ece_patients for v in names]
    out["ece_debiased"][np.asarray(small)] = np.nan
    return out


def _cell_subgroups(ctx: CellResampling, level: float) -> tuple[list[dict], dict]:
    cell, rows, reps = ctx.cell, [], {}
    for attr, lab in ctx.test.labels.items():
        for value in sorted(set(lab) - {""}):
            idx = np.flatnonzero(lab == value)
            n_pat = n_patients(cell.test, idx)
            row = {"encoder": cell.encoder, "dataset": cell.dataset, "attribute": attr,
                   "subgroup": value, "n_images": len(idx), "n_patients": n_pat}  # fmt: skip
            if n_pat < ctx.min_patients:
                rows.append({**row, "status": TOO_SMALL})
                continue
            vals = _boot_values(ctx, attr, value, idx)
            row.update(status="ok", shift_drops_own=vals.pop("shift_own"),
                       shift_targets=len(ctx.targets))  # fmt: skip
            reps[(attr, value)] = vals
            for name, v in vals.items():
                lo, hi = percentile_interval(v[1:], level)
                row.update({name: float(v[0]), f"{name}_lo": lo, f"{name}_hi": hi})
            rows.append(row)
    return rows, reps


def _extreme(m: np.ndarray, worst_is_max: bool) -> tuple[np.ndarray, int]:
    """Worst value per column of ``m`` (G, 1 + B) and the worst row at the point (-1: none)."""
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN replicate columns
        worst = np.nanmax(m, 0) if worst_is_max else np.nanmin(m, 0)
    at = -1
    if np.isfinite(m[:, 0]).any():
        at = int(np.nanargmax(m[:, 0]) if worst_is_max else np.nanargmin(m[:, 0]))
    return worst, at


#: The worst table's columns (an empty table keeps them: no attribute had a reported subgroup).
WORST_COLUMNS: tuple[str, ...] = (
    "encoder", "dataset", "attribute", "metric", "n_subgroups", "n_compared", "worst_subgroup",
    "worst", "worst_lo", "worst_hi", "gap", "gap_debiased", "gap_lo", "gap_hi", "p_value",
    "real_difference",
)  # fmt: skip


def _worst_row(ctx: CellResampling, attr: str, metric: str, m: np.ndarray, perm: np.ndarray, level):
    """One row of the worst table: the worst subgroup, the gap and its permutation test."""
    names = [v for _, v in _reported(ctx, attr)]
    worst, at = _extreme(m, WORST_IS_MAX[metric])
    wlo, whi = percentile_interval(worst[1:], level)
    gap = gaps(m)
    bc, glo, ghi = bias_corrected_gap(gap, level)
    p = permutation_p_value(gaps(perm))
    return {"encoder": ctx.cell.encoder, "dataset": ctx.cell.dataset, "attribute": attr,
            "metric": metric, "n_subgroups": len(names),
            "n_compared": int(np.isfinite(m[:, 0]).sum()),
            "worst_subgroup": names[at] if at >= 0 else "", "worst": float(worst[0]),
            "worst_lo": wlo, "worst_hi": whi, "gap": float(gap[0]), "gap_debiased": bc,
            "gap_lo": glo, "gap_hi": ghi, "p_value": p,
            "real_difference": bool(p < ALPHA)}  # fmt: skip


def _reported(ctx: CellResampling, attr: str) -> list[tuple[str, str]]:
    """Reported subgroups of ``attr`` (at least ``min_patients``), sorted."""
    lab = ctx.test.labels[attr]
    return [(attr, v) for v in sorted(set(lab) - {""})
            if n_patients(ctx.test.split, np.flatnonzero(lab == v)) >= ctx.min_patients]  # fmt: skip


def _worst(ctx: CellResampling, reps: dict, level: float) -> list[dict]:
    """Worst subgroup, gap and permutation p-value per attribute and axis (ECE debiased)."""
    out = []
    for attr in sorted({a for a, _ in reps}):
        keys = _reported(ctx, attr)
        perm = _perm_values(ctx, attr, [v for _, v in keys]) if len(keys) > 1 else None
        for metric, key in SELECT_ON.items():
            m = np.stack([reps[k][key] for k in keys])  # (G, 1 + B)
            pm = perm[key] if perm is not None else np.full((1, 2), np.nan)
            out.append(_worst_row(ctx, attr, metric, m, pm, level))
    return out


def _worst_axes(ctx: CellResampling, reps: dict) -> dict[str, tuple[np.ndarray, str]]:
    """Per axis, the worst over every reported subgroup of every attribute: ``(1 + B,)``
    values and the point's worst subgroup as ``attribute=value`` (ECE: the debiased ECE of
    subgroups with at least ``min_ece_patients``; without one, the whole test set's, ``all``)."""
    keys = list(reps)
    out = {}
    for metric, key in SELECT_ON.items():
        worst, at = _extreme(np.stack([reps[k][key] for k in keys]), WORST_IS_MAX[metric])
        if at < 0:
            rows = np.arange(len(ctx.test.inverse))
            worst = values_on(ctx.cell, rows, ctx.test.weights(rows), [])[key]
            out[metric] = (worst, "all")
        else:
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
    min_ece_patients: int = MIN_ECE_SUBGROUP_PATIENTS,
    n_permutations: int = DEFAULT_SUBGROUP_PERMUTATIONS,
    n_jobs: int | None = 1,
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
    min_ece_patients : int
        Fewest distinct patients a subgroup needs for an ECE (NaN below).
    n_permutations : int
        Reassignments of the subgroup labels in the permutation test of each gap.
    n_jobs : int or None
        Worker processes the cells are shared out to (``None``: every available core); each
        cell's numbers depend on that cell only, so they are the same for every ``n_jobs``.

    Returns
    -------
    SubgroupResult
        ``subgroups``: ``status``, sizes, ``auroc``/``ece``/``robustness_drop`` and their
        ``_lo``/``_hi``, and ``shift_drops_own`` (of the ``shift_targets`` drops inside R, how
        many are the subgroup's own; the others are the cell's overall drop); ``ece`` is the
        plug-in, ``ece_debiased`` Kumar et al.'s. ``worst``: per attribute and axis the worst
        subgroup (lowest AUROC, highest debiased ECE or R), its value with its bootstrap range
        (``worst_lo``/``worst_hi``, not a confidence interval), the plug-in ``gap`` (best −
        worst, ≥ 0), ``gap_debiased`` with its basic bootstrap interval ``gap_lo``/``gap_hi``,
        the permutation ``p_value`` and ``real_difference`` (p < 0.05). ``axes``: the worst
        over all attributes.
    """
    settings = _Settings(min_patients, n_replicates, seed, level, min_ece_patients, n_permutations)
    jobs = check_jobs(n_jobs)
    sizes = [sum(p.size for p in c.probability_arrays()) for c in cells.values()]
    done = map_cells(partial(_one_cell, settings), list(cells.values()), jobs, sizes)
    sub, worst, axes = [], [], {}
    for key, (rows, worst_rows, cell_axes) in zip(cells, done, strict=True):
        sub += rows
        worst += worst_rows
        if cell_axes is not None:
            axes[key] = cell_axes
    return _result(sub, worst, axes)


@dataclass(frozen=True)
class _Settings:
    """The analysis's settings, sent with each cell to the process that computes it."""

    min_patients: int
    n_replicates: int
    seed: int
    level: float
    min_ece_patients: int
    n_permutations: int


def _one_cell(
    settings: _Settings, cell: CellPredictions
) -> tuple[list[dict], list[dict], dict[str, tuple[np.ndarray, str]] | None]:
    """One cell's subgroup rows, worst rows and worst-over-attributes axes (None: none)."""
    sizes = (settings.min_patients, settings.min_ece_patients, settings.n_permutations)
    ctx = cell_resampling(cell.widened(), settings.n_replicates, settings.seed, sizes)
    rows, reps = _cell_subgroups(ctx, settings.level)
    return rows, _worst(ctx, reps, settings.level), _worst_axes(ctx, reps) if reps else None


def _result(
    sub: list[dict], worst: list[dict], axes: dict[tuple[str, str], dict]
) -> SubgroupResult:
    """The tables of every cell's rows (columns present even when every subgroup is small)."""
    table = pd.DataFrame(sub)
    names = (*WORST_IS_MAX, "ece_debiased")
    for name in (*names, *(f"{m}_{e}" for m in names for e in ("lo", "hi"))):
        if not table.empty and name not in table:
            table[name] = np.nan  # every subgroup too small: the columns, all NaN
    return SubgroupResult(table, pd.DataFrame(worst, columns=list(WORST_COLUMNS)), axes)
