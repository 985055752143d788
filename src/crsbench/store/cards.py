"""The card facts the analyses need, recorded in the store (table ``cards``).

The analyses (:mod:`crsbench.stats`) and the report never import the encoder or dataset
registries. What they need from the cards travels in the store, written by the pipeline when
it opens the store, like other provenance: each encoder's family group (the medical-vs-general
comparisons) and each probe dataset's label names in output order (the per-label tables).
One row per fact: ``(kind, name, fact, value)``, ``value`` a JSON text.

A store written before this table existed has none: :func:`crsbench.store.load_runs` then adds
no ``encoder_group`` column and the analyses say which encoders they left out and why.
Running the same config again (every cell already done) records the table.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from crsbench.store.table_specs import CARDS

#: Table name of the card facts.
CARDS_TABLE = CARDS.name
CARDS_DDL = CARDS.ddl()
#: The column :func:`crsbench.store.load_runs` adds to ``runs`` from the encoders' groups.
ENCODER_GROUP_COLUMN = "encoder_group"
#: What the analyses say when a store holds no card facts.
NO_CARDS_NOTE = (
    "this results store has no 'cards' table (written before crsbench recorded each encoder's "
    "family group and each dataset's label names); run the same config again with "
    "`crsbench run` (done cells are skipped) to record them"
)


@dataclass(frozen=True)
class CardFacts:
    """Encoder name → family group, dataset name → label names (output order)."""

    encoder_groups: Mapping[str, str] = field(default_factory=dict)
    label_names: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: Encoder name → its ``weights.lock`` entry (source, revision, files and sha256).
    weights_lock: Mapping[str, Any] = field(default_factory=dict)

    def rows(self) -> list[tuple[str, str, str, str]]:
        """The ``(kind, name, fact, value)`` rows of table ``cards``."""
        out = [
            ("encoder", n, "family_group", json.dumps(g)) for n, g in self.encoder_groups.items()
        ]
        out += [("dataset", n, "label_names", json.dumps(list(v)))
                for n, v in self.label_names.items()]  # fmt: skip
        out += [("encoder", n, "weights_lock", json.dumps(e, sort_keys=True))
                for n, e in self.weights_lock.items()]  # fmt: skip
        return out

    @classmethod
    def from_table(cls, table: pd.DataFrame) -> CardFacts:
        """Parse the rows of table ``cards`` (unknown facts are ignored)."""
        groups: dict[str, str] = {}
        labels: dict[str, tuple[str, ...]] = {}
        locks: dict[str, Any] = {}
        for kind, name, fact, value in table[["kind", "name", "fact", "value"]].itertuples(
            index=False
        ):
            if (kind, fact) == ("encoder", "family_group"):
                groups[str(name)] = str(json.loads(value))
            elif (kind, fact) == ("dataset", "label_names"):
                labels[str(name)] = tuple(str(v) for v in json.loads(value))
            elif (kind, fact) == ("encoder", "weights_lock"):
                locks[str(name)] = json.loads(value)
        return cls(groups, labels, locks)


def write_card_facts(con: Any, facts: CardFacts) -> None:
    """Create table ``cards`` if absent and insert (or replace) every fact of ``facts``."""
    con.execute(CARDS_DDL)
    for row in facts.rows():
        con.execute(f"INSERT OR REPLACE INTO {CARDS_TABLE} VALUES (?, ?, ?, ?)", list(row))


def attach_encoder_groups(runs: pd.DataFrame, facts: CardFacts | None) -> pd.DataFrame:
    """``runs`` with an ``encoder_group`` column from ``facts`` (``runs`` itself when the
    store holds no card facts or already has the column)."""
    if facts is None or not facts.encoder_groups or ENCODER_GROUP_COLUMN in runs:
        return runs
    out = runs.copy()
    out[ENCODER_GROUP_COLUMN] = out["encoder"].map(dict(facts.encoder_groups))
    return out
