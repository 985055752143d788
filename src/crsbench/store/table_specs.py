"""The store's other tables, declared once: each column's name and SQL type, and the key.

Table ``runs`` has its own declaration with per-row rules (:mod:`crsbench.store.columns`),
and ``metrics`` is derived from it (its group columns and each metric's mean, std and count);
every other table the writer creates is a :class:`TableSpec` here, and its ``CREATE TABLE``
statement and Arrow schema are derived from it (:meth:`TableSpec.ddl`, :meth:`TableSpec.arrow`),
never written out by hand. Every column of these tables is ``NOT NULL``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from crsbench.store.prediction_layout import (
    BLOBS_TABLE,
    PREDICTIONS_TABLE,
    SPLIT_META_TABLE,
    SPLITS_TABLE,
)

#: SQL type → Arrow type of the columns these tables use.
ARROW_TYPES: dict[str, pa.DataType] = {
    "VARCHAR": pa.string(),
    "INTEGER": pa.int32(),
    "BLOB": pa.binary(),
    "VARCHAR[]": pa.list_(pa.string()),
    "TIMESTAMP": pa.timestamp("us"),
    "BIGINT": pa.int64(),
    "DOUBLE": pa.float64(),
}


@dataclass(frozen=True)
class TableSpec:
    """One table: its name, ``(column, SQL type)`` pairs in order, and its primary key."""

    name: str
    columns: tuple[tuple[str, str], ...]
    key: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        """The column names, in order."""
        return tuple(name for name, _ in self.columns)

    def ddl(self, replace: bool = False) -> str:
        """``CREATE TABLE IF NOT EXISTS`` (``replace``: ``CREATE OR REPLACE TABLE``), every
        column ``NOT NULL``, with the key if any."""
        cols = [f"{name} {sql} NOT NULL" for name, sql in self.columns]
        if self.key:
            cols.append(f"PRIMARY KEY ({', '.join(self.key)})")
        head = "CREATE OR REPLACE TABLE" if replace else "CREATE TABLE IF NOT EXISTS"
        return f"{head} {self.name} ({', '.join(cols)})"

    def arrow(self) -> pa.Schema:
        """The Arrow schema of a batch of rows of this table."""
        return pa.schema([(name, ARROW_TYPES[sql]) for name, sql in self.columns])


def _text(*names: str) -> tuple[tuple[str, str], ...]:
    return tuple((n, "VARCHAR") for n in names)


#: Each encoder's family group and each dataset's label names (:mod:`crsbench.store.cards`).
CARDS = TableSpec("cards", _text("kind", "name", "fact", "value"), ("kind", "name", "fact"))
#: Images a run left out (:mod:`crsbench.store.quarantine`).
QUARANTINE = TableSpec(
    "quarantine",
    _text("dataset", "split", "image_id", "path", "error_class", "message"),
    ("dataset", "image_id"),
)
#: What each cell must hold (:mod:`crsbench.store.stored_plan`).
PLAN = TableSpec(
    "plan",
    _text("regime", "encoder", "dataset", "seeds", "fractions", "conditions", "shift_targets"),
    ("regime", "encoder", "dataset"),
)
#: The store's config and versions, one row (:mod:`crsbench.store.writer`).
META = TableSpec(
    "meta",
    (("schema_version", "INTEGER"), ("config_hash", "VARCHAR"), ("config_json", "VARCHAR"),
     ("package_version", "VARCHAR"), ("created_at", "TIMESTAMP")),
)  # fmt: skip
#: Per-sample predictions (:mod:`crsbench.store.predictions`): the rows a prediction is
#: scored on, the probability matrices, which run has which, and the rows' subgroup values.
SPLITS = TableSpec(
    SPLITS_TABLE,
    (("split_key", "VARCHAR"), ("dataset", "VARCHAR"), ("split", "VARCHAR"), ("task", "VARCHAR"),
     ("n_rows", "INTEGER"), ("n_targets", "INTEGER"), ("image_ids", "VARCHAR[]"),
     ("groups", "VARCHAR[]"), ("targets", "BLOB")),
    ("split_key",),
)  # fmt: skip
BLOBS = TableSpec(
    BLOBS_TABLE,
    (("prob_key", "VARCHAR"), ("n_rows", "INTEGER"), ("n_outputs", "INTEGER"),
     ("dtype", "VARCHAR"), ("prob", "BLOB")),
    ("prob_key",),
)  # fmt: skip
PREDICTIONS = TableSpec(
    PREDICTIONS_TABLE, _text("run_key", "split", "split_key", "prob_key"), ("run_key", "split")
)
SPLIT_META = TableSpec(
    SPLIT_META_TABLE,
    (("split_key", "VARCHAR"), ("attribute", "VARCHAR"), ("vals", "VARCHAR[]")),
    ("split_key", "attribute"),
)
#: One row per reliability-diagram bin of a clean, full-label run, rebuilt from the runs'
#: details after every write (:mod:`crsbench.store.reliability`).
RELIABILITY = TableSpec(
    "reliability",
    (("encoder", "VARCHAR"), ("dataset", "VARCHAR"), ("seed", "BIGINT"),
     ("recalibrator", "VARCHAR"), ("bin", "BIGINT"), ("conf", "DOUBLE"), ("acc", "DOUBLE"),
     ("count", "BIGINT")),
)  # fmt: skip
#: Every table declared here, by name.
TABLES: dict[str, TableSpec] = {
    t.name: t
    for t in (CARDS, QUARANTINE, PLAN, META, SPLITS, BLOBS, PREDICTIONS, SPLIT_META, RELIABILITY)
}
