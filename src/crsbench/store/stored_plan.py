"""The plan a store was run for, recorded in the store (table ``plan``).

What each cell must hold is the planner's answer for the store's config
(:func:`crsbench.runs.plan.recorded_plan`), never what the store happens to hold: scoring reads
it to know the seeds, label fractions, conditions and shift targets a cell is missing. The
pipeline writes it when it opens the store, next to the config and the card facts; one row
per planned cell of each regime (the frozen grid, and the LoRA regime's cells when it is
enabled), its lists as JSON text.

A store written before this table existed has none: :func:`crsbench.store.read_plan` returns
``None`` and scoring falls back to the cells of the stored config (:data:`NO_PLAN_NOTE`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import pandas as pd

from crsbench.core.errors import StoreError
from crsbench.protocol import FROZEN
from crsbench.store.table_specs import PLAN

#: Table name of the recorded plan.
PLAN_TABLE = PLAN.name
PLAN_DDL = PLAN.ddl()
#: What the analyses say when a store holds no recorded plan.
NO_PLAN_NOTE = (
    "this results store has no 'plan' table (written before crsbench recorded what each cell "
    "must hold): what is expected falls back to the cells of its config and the seeds, "
    "conditions and shift targets the store holds; run the same config again with "
    "`crsbench run` (done cells are skipped) to record it"
)

Condition = tuple[str, int]


@dataclass(frozen=True)
class PlannedCell:
    """What one (encoder, dataset) cell of ``regime`` must hold: its seeds, label fractions,
    perturbed conditions ``(name, severity)`` and shift targets, in the planner's order."""

    encoder: str
    dataset: str
    seeds: tuple[int, ...]
    fractions: tuple[float, ...]
    conditions: tuple[Condition, ...]
    shift_targets: tuple[str, ...]
    regime: str = FROZEN

    def row(self) -> tuple[str, str, str, str, str, str, str]:
        """The ``plan`` table row (lists as JSON text)."""
        conds = [[n, int(s)] for n, s in self.conditions]
        return (self.regime, self.encoder, self.dataset, json.dumps(list(self.seeds)),
                json.dumps(list(self.fractions)), json.dumps(conds),
                json.dumps(list(self.shift_targets)))  # fmt: skip


@dataclass(frozen=True)
class StoredPlan:
    """Every planned cell of a store, looked up by ``(encoder, dataset)`` and regime."""

    cells: tuple[PlannedCell, ...]

    def __iter__(self) -> Iterator[PlannedCell]:
        return iter(self.cells)

    def keys(self, regime: str = FROZEN) -> set[tuple[str, str]]:
        """The planned ``(encoder, dataset)`` pairs of ``regime``."""
        return {(c.encoder, c.dataset) for c in self.cells if c.regime == regime}

    def get(self, encoder: str, dataset: str, regime: str = FROZEN) -> PlannedCell | None:
        """The planned cell, or ``None`` when ``(encoder, dataset)`` is not planned."""
        key = (regime, encoder, dataset)
        return next((c for c in self.cells if (c.regime, c.encoder, c.dataset) == key), None)

    def of_regime(self, regime: str) -> StoredPlan | None:
        """The cells of ``regime``; ``None`` when the plan has none (the regime was not
        planned, or the plan predates its recording: what the store holds decides)."""
        mine = tuple(c for c in self.cells if c.regime == regime)
        return StoredPlan(mine) if mine else None

    @staticmethod
    def ordered(cells: Iterable[PlannedCell]) -> StoredPlan:
        """A plan of ``cells`` in the order the table is read back: (regime, encoder,
        dataset)."""
        return StoredPlan(tuple(sorted(cells, key=lambda c: (c.regime, c.encoder, c.dataset))))

    @classmethod
    def from_table(cls, table: pd.DataFrame) -> StoredPlan:
        """Parse the rows of table ``plan``.

        Raises
        ------
        StoreError
            A list column is not the JSON the writer wrote (names the cell and column).
        """
        cells = []
        if "regime" not in table:  # recorded before the plan named its regime: frozen only
            table = table.assign(regime=FROZEN)
        cols = ["regime", "encoder", "dataset", "seeds", "fractions", "conditions",
                "shift_targets"]  # fmt: skip
        for regime, enc, ds, seeds, fracs, conds, targets in table[cols].itertuples(index=False):
            try:
                cells.append(PlannedCell(
                    str(enc), str(ds), tuple(int(s) for s in json.loads(seeds)),
                    tuple(float(f) for f in json.loads(fracs)),
                    tuple((str(n), int(v)) for n, v in json.loads(conds)),
                    tuple(str(t) for t in json.loads(targets)), str(regime)))  # fmt: skip
            except (ValueError, TypeError) as exc:
                raise StoreError(
                    f"table '{PLAN_TABLE}' row {regime}/{enc}/{ds} must hold JSON lists. Got {exc}."
                ) from None
        return cls.ordered(cells)


def write_plan(con: Any, plan: StoredPlan) -> None:
    """Create table ``plan`` if absent and replace its rows with ``plan``'s cells."""
    con.execute(PLAN_DDL)
    con.execute(f"DELETE FROM {PLAN_TABLE}")
    for cell in plan:
        con.execute(f"INSERT INTO {PLAN_TABLE} VALUES (?, ?, ?, ?, ?, ?, ?)", list(cell.row()))
