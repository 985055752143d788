"""The axes of one (encoder, dataset, seed) from its main-protocol rows, with the reasons of
every NaN.

Nothing is absorbed: an axis whose inputs are not all present and finite is NaN, and a note
names what is missing (see :mod:`crsbench.scoring.notes`). What each axis expects:

- D, C: the clean full-label row;
- L (retention, AULC): the clean rows at every retention fraction and at 1.0;
- R: every one of the 15 paper conditions
  (:data:`crsbench.protocol.PAPER_CONDITIONS`) and the paper's shift target
  (:data:`~crsbench.protocol.PAPER_SHIFTS`) when the store evaluates it for this
  dataset;
- R extra: every extra condition and every other shift target the store evaluates for this
  dataset (none: NaN, no note);
- R all shifts (the named variant ``robustness_drop_all_shifts``): the 15 paper conditions
  and every shift target, paper's or extra.

A shift target's drop is ``reference − AUROC_target``: the reference is the source's clean
AUROC on the labels the target provides when its record says so
(:mod:`crsbench.core.shift_labels`), else the clean AUROC.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from crsbench.protocol import PAPER_CONDITIONS, condition_label
from crsbench.scoring import notes as nt

Condition = tuple[str, int]
#: Notes of a seed that has no clean full-label row (see :func:`crsbench.scoring.has_clean_row`).
NO_ROWS = "no main-protocol rows"
NO_CLEAN = "D, C: clean full-label row missing"
#: Note of every seed of a planned cell the store holds no main-protocol row of.
NOT_RUN = "cell not run (planned by the config, absent from the store)"


@dataclass(frozen=True)
class SeedRows:
    """AUROC / ECE of one (encoder, dataset, seed), looked up by what the axes need.

    ``clean`` maps a label fraction to ``(auroc, ece)``; ``perturbed`` maps
    ``(perturbation, severity)`` to the full-label AUROC; ``shift`` maps a shift target to
    its AUROC; ``shift_reference`` maps a shift target whose compared labels leave out a
    source label to the source's clean AUROC on the compared ones (its drop's reference,
    :mod:`crsbench.core.shift_labels`; absent: the clean AUROC).
    """

    clean: Mapping[float, tuple[float, float]]
    perturbed: Mapping[Condition, float]
    shift: Mapping[str, float]
    shift_reference: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Expected:
    """What one dataset's cells must hold: retention fractions, the shift targets inside R
    (:data:`~crsbench.protocol.PAPER_SHIFTS`), the extra conditions and the extra
    shift targets (beside R)."""

    fractions: tuple[float, ...]
    shift_targets: tuple[str, ...]
    extras: tuple[Condition, ...]
    extra_shift_targets: tuple[str, ...] = ()


_Key = TypeVar("_Key", bound=Hashable)


def _gather(
    axis: str, noun: str, wanted: Sequence[tuple[str, _Key]], found: Mapping, out: list[str]
) -> dict[_Key, float] | None:
    """Values of ``wanted`` (label, key) from ``found``, by key; ``None`` and notes if any is
    absent or NaN."""
    absent = [label for label, key in wanted if key not in found]
    nan = [label for label, key in wanted if key in found and not np.isfinite(found[key])]
    if absent:
        out.append(nt.listed(axis, noun, absent, "missing"))
    if nan:
        out.append(nt.listed(axis, noun, nan, "AUROC NaN"))
    if absent or nan:
        return None
    return {key: float(found[key]) for _label, key in wanted}


def _label_axes(
    rows: SeedRows, exp: Expected, full_auc: float, out: list[str]
) -> tuple[float, float]:
    from crsbench.metrics import aulc, retention

    auc = {f: a for f, (a, _e) in rows.clean.items()}
    got = _gather("L", "fraction", [(f"{f:g}", f) for f in exp.fractions], auc, out)
    if got is None or not np.isfinite(full_auc):  # a NaN full-label AUROC is noted under D
        return np.nan, np.nan
    curve = {float(k): v for k, v in got.items()} | {1.0: float(full_auc)}
    return retention(curve, fractions=exp.fractions), aulc(curve)


def _references(
    rows: SeedRows, axis: str, wanted: Sequence[str], out: list[str], got: dict | None
) -> dict | None:
    """``got`` unless a wanted shift's recorded reference (the source's clean AUROC on the
    compared labels) is NaN: then ``None`` and a note."""
    nan = [f"shift:{t}" for t in wanted if not np.isfinite(rows.shift_reference.get(t, 0.0))]
    if nan:
        out.append(nt.listed(axis, "shift", nan, "source AUROC on the compared labels NaN"))
        return None
    return got


def _drops(rows: SeedRows, clean_auc: float, conds: dict | None) -> dict | None:
    """Per-condition drops: ``clean − AUROC`` of a perturbed condition (a tuple key), and
    ``reference − AUROC`` of a shift target (a str key; the reference is the source's clean
    AUROC on the labels compared, see :mod:`crsbench.core.shift_labels`)."""
    if conds is None:
        return None
    return {
        k: rows.shift_reference.get(k, clean_auc) - v if isinstance(k, str) else clean_auc - v
        for k, v in conds.items()
    }


def _drop(rows: SeedRows, clean_auc: float, conds: dict | None) -> float:
    from crsbench.metrics import robustness_from_drops

    if conds is None or not conds or not np.isfinite(clean_auc):
        return np.nan
    return robustness_from_drops(_drops(rows, clean_auc, conds) or {})


def seed_axes(rows: SeedRows, exp: Expected) -> tuple[dict[str, float], str]:
    """The axes of one seed and the joined note of what is missing (``""`` = complete).

    Returns
    -------
    (dict, str)
        ``auroc, ece, retention, aulc, robustness_drop, shift_auroc_mean_targets,
        robustness_drop_extra, robustness_drop_with_extra, robustness_drop_all_shifts`` (R's
        formula over the 15 paper conditions and every shift target, paper's or extra),
        ``n_conditions, n_extra_conditions`` and the note. ``shift_auroc_mean_targets`` is
        the mean AUROC over the cell's expected shift targets (each on its own labels; NaN
        when one is missing or the cell has none); one target's AUROC is ``shift_auroc`` of
        :func:`crsbench.stats.shift_auroc_by_encoder`.
    """
    out: list[str] = []
    if not rows.clean and not rows.perturbed and not rows.shift:
        return _empty(exp), NO_ROWS
    auc, ece = rows.clean.get(1.0, (np.nan, np.nan))
    if 1.0 not in rows.clean:
        out.append(NO_CLEAN)
    else:
        if not np.isfinite(auc):
            out.append("D: clean AUROC NaN")
        if not np.isfinite(ece):
            out.append("C: ECE NaN")
    ret, area = _label_axes(rows, exp, auc, out)
    paper = _gather("R", "condition", [(condition_label(*c), c) for c in PAPER_CONDITIONS],
                    rows.perturbed, out)  # fmt: skip
    shifts = _references(rows, "R", exp.shift_targets, out,
                         _gather("R", "shift", [(f"shift:{t}", t) for t in exp.shift_targets],
                                 rows.shift, out))  # fmt: skip
    extra = _gather("R extra", "condition", [(condition_label(*c), c) for c in exp.extras],
                    rows.perturbed, out)  # fmt: skip
    extra_shifts = _references(rows, "R extra", exp.extra_shift_targets, out,
                               _gather("R extra", "shift", [(f"shift:{t}", t) for t in
                                       exp.extra_shift_targets], rows.shift, out))  # fmt: skip
    extra = None if extra is None or extra_shifts is None else extra | extra_shifts
    in_r = None if paper is None or shifts is None else paper | shifts
    with_extra = None if in_r is None or extra is None else in_r | extra
    every_shift = None if in_r is None or extra_shifts is None else in_r | extra_shifts
    values = {
        "auroc": float(auc), "ece": float(ece), "retention": float(ret), "aulc": float(area),
        "robustness_drop": _drop(rows, auc, in_r),
        "shift_auroc_mean_targets": _mean_targets(rows, exp),
        "robustness_drop_extra": _drop(rows, auc, extra),
        "robustness_drop_with_extra": _drop(rows, auc, with_extra),
        "robustness_drop_all_shifts": _drop(rows, auc, every_shift),
        "n_conditions": len(PAPER_CONDITIONS) + len(exp.shift_targets),
        "n_extra_conditions": len(exp.extras) + len(exp.extra_shift_targets),
    }  # fmt: skip
    return values, nt.join(out)


def _mean_targets(rows: SeedRows, exp: Expected) -> float:
    """Mean target AUROC over every expected shift target (in R and beside it); NaN when
    the cell expects none or one is missing (never a mean of those present)."""
    targets = (*exp.shift_targets, *exp.extra_shift_targets)
    values = [rows.shift.get(t, np.nan) for t in targets]
    return float(np.mean(values)) if values else np.nan


def _empty(exp: Expected) -> dict[str, float]:
    nan = float("nan")
    return {
        "auroc": nan, "ece": nan, "retention": nan, "aulc": nan, "robustness_drop": nan,
        "shift_auroc_mean_targets": nan, "robustness_drop_extra": nan, "robustness_drop_with_extra": nan,
        "robustness_drop_all_shifts": nan,
        "n_conditions": len(PAPER_CONDITIONS) + len(exp.shift_targets),
        "n_extra_conditions": len(exp.extras) + len(exp.extra_shift_targets),
    }  # fmt: skip
