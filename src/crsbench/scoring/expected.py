"""What each cell must hold: from the store's recorded plan, never from what the store holds.

:func:`cell_expectations` answers, per (encoder, dataset) cell, which seeds, retention
fractions, conditions and shift targets its axes need. With the plan the pipeline recorded
(:class:`~crsbench.store.stored_plan.StoredPlan`) every planned cell is expected, with the planned
seeds, conditions and shift targets, whether or not the store holds a single row of it: a
shift target that no cell evaluated (CheXpert without MIMIC-CXR) or a seed that no cell
holds is missing, and the axes it feeds are NaN with the reason. The retention fractions are
the protocol's (L is defined over them, whatever the config plans).

Without a recorded plan (a store written before it was recorded, or a bare runs table) the
expectations fall back to what the store holds per dataset: its seeds, its shift targets and
its extra conditions (:data:`~crsbench.store.stored_plan.NO_PLAN_NOTE`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from crsbench.protocol import PAPER_CONDITIONS, SHIFT, condition_roles, shift_in_r
from crsbench.scoring.seed_axes import Expected
from crsbench.store.stored_plan import PlannedCell, StoredPlan


@dataclass(frozen=True)
class CellExpectation:
    """One cell to score: its seeds and what each seed must hold; ``planned`` says whether
    the expectation comes from the recorded plan (else from what the store holds)."""

    encoder: str
    dataset: str
    seeds: tuple[int, ...]
    expected: Expected
    planned: bool


def cell_expectations(
    m: pd.DataFrame,
    plan: StoredPlan | None,
    include_shift: bool | Sequence[str],
    fractions: tuple[float, ...],
    robustness: str = "paper",
) -> list[CellExpectation]:
    """Every cell to score, sorted by (encoder, dataset).

    Parameters
    ----------
    m : pandas.DataFrame
        The main-protocol rows of one regime.
    plan : StoredPlan or None
        The store's recorded plan; ``None`` falls back to what ``m`` holds.
    include_shift, fractions, robustness
        As :func:`crsbench.scoring.axes_from_runs`.
    """
    held = sorted({(str(e), str(d)) for e, d in zip(m["encoder"], m["dataset"], strict=True)})
    held_seeds = tuple(sorted({int(s) for s in m["seed"]}))
    legacy = _store_expectations(m, include_shift, fractions, robustness)
    out = {}
    for cell in plan or ():
        exp = _planned_expected(cell, include_shift, fractions, robustness)
        out[(cell.encoder, cell.dataset)] = CellExpectation(
            cell.encoder, cell.dataset, cell.seeds, exp, planned=True
        )
    planned_seeds = {s for cell in plan or () for s in cell.seeds}
    seeds = tuple(sorted(set(held_seeds) | planned_seeds))
    for enc, ds in held:  # a held cell the plan does not name: what the store holds
        out.setdefault((enc, ds), CellExpectation(enc, ds, seeds, legacy[ds], planned=False))
    return [out[k] for k in sorted(out)]


def _planned_expected(
    cell: PlannedCell,
    include_shift: bool | Sequence[str],
    fractions: tuple[float, ...],
    robustness: str,
) -> Expected:
    """:class:`Expected` of a planned cell: its shift targets (those kept) inside or beside R,
    and its planned conditions outside the 15 paper ones as extras."""
    targets = [t for t in cell.shift_targets if _kept(t, include_shift)]
    in_r = tuple(t for t in targets if shift_in_r(cell.dataset, t, robustness))
    beside = tuple(t for t in targets if not shift_in_r(cell.dataset, t, robustness))
    extras = tuple(sorted(c for c in set(cell.conditions) if c not in PAPER_CONDITIONS))
    return Expected(fractions, in_r, extras, beside)


def _store_expectations(
    m: pd.DataFrame,
    include_shift: bool | Sequence[str],
    fractions: tuple[float, ...],
    robustness: str = "paper",
) -> dict[str, Expected]:
    """Per dataset, without a plan: the shift targets and extras the store evaluates."""
    full = m[np.isclose(m["fraction"].astype(float), 1.0)]
    roles = condition_roles(full["condition"], full["severity"])
    out = {}
    for ds in sorted(m["dataset"].unique()):
        mine = (full["dataset"] == ds).to_numpy()
        shift = full[mine & (roles == SHIFT) & (full["eval_dataset"] != ds).to_numpy()]
        extra = full[mine & (roles == "extra") & (full["eval_dataset"] == ds).to_numpy()]
        targets = [t for t in sorted(shift["eval_dataset"].unique()) if _kept(t, include_shift)]
        in_r = tuple(t for t in targets if shift_in_r(ds, t, robustness))
        beside = tuple(t for t in targets if not shift_in_r(ds, t, robustness))
        pairs = sorted({(str(c), int(v)) for c, v in zip(extra["condition"], extra["severity"],
                                                          strict=True)})  # fmt: skip
        out[str(ds)] = Expected(fractions, in_r, tuple(pairs), beside)
    return out


def _kept(target: str, include_shift: bool | Sequence[str]) -> bool:
    if isinstance(include_shift, bool):
        return include_shift
    return target in include_shift
