"""The results store's ``runs`` table, declared once: every column's name, SQL type, role and
per-row rule.

:data:`RUNS_TABLE` is the one declaration. Everything else is derived from it: the column
lists below, the DDL and the Arrow schema (:mod:`crsbench.store.schema`), the record and
frame validators (:mod:`crsbench.store.rules`, :mod:`crsbench.store.records`,
:mod:`crsbench.store.validate`), the ``metrics`` table, the exports and the reader. Adding a
metric column is one :class:`Column` line in the metric block (plus its computation in
:func:`crsbench.evaluation.cell_scoring.measure`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from crsbench.store.table_specs import RELIABILITY

#: Version of the ``runs`` / ``metrics`` / ``meta`` table layout.
SCHEMA_VERSION = 1
#: The largest value of an ``INTEGER`` column (DuckDB's 32-bit integer: ``seed``, ``severity``).
INTEGER_MAX = 2**31 - 1


class Role(str, Enum):
    """What a column of ``runs`` is: part of the run's identity, a metric value, or provenance."""

    IDENTITY = "identity"
    METRIC = "metric"
    PROVENANCE = "provenance"


class Rule(str, Enum):
    """The per-row rule of a column (:mod:`crsbench.store.rules` checks each, one value at a
    time for a record and column-wise for a frame)."""

    NAME = "a non-empty string"
    COUNT = "an integer >= 0"
    UNIT = "a number in (0, 1]"
    REGIME = "one of the protocol's regimes"
    METRIC = "a finite number or NULL"
    REQUIRED_METRIC = "a finite number, or NULL with its reason in details['undefined']"
    HASH = "64 lowercase hex characters (the config hash)"
    FILLED = "a filled string (provenance)"
    SECONDS = "a finite number >= 0"
    TIMESTAMP = "a timestamp"
    VERSION = "the schema version"
    DETAILS = "a JSON object without NaN/Inf"
    KEY = "the sha256 of the identity and the config hash"


@dataclass(frozen=True)
class Column:
    """One column of table ``runs``: its name, SQL type, role and rule (a metric may be NULL,
    every other column is ``NOT NULL``)."""

    name: str
    sql: str
    role: Role
    rule: Rule

    @property
    def nullable(self) -> bool:
        """Whether the column may hold NULL (the metrics)."""
        return self.role is Role.METRIC


_I, _M, _P = Role.IDENTITY, Role.METRIC, Role.PROVENANCE
#: Table ``runs``, in column order: identity, metrics, provenance.
RUNS_TABLE: tuple[Column, ...] = (
    Column("encoder", "VARCHAR", _I, Rule.NAME),
    Column("dataset", "VARCHAR", _I, Rule.NAME),
    Column("eval_dataset", "VARCHAR", _I, Rule.NAME),
    Column("seed", "INTEGER", _I, Rule.COUNT),
    Column("regime", "VARCHAR", _I, Rule.REGIME),
    Column("probe", "VARCHAR", _I, Rule.NAME),
    Column("layer", "DOUBLE", _I, Rule.UNIT),
    Column("fraction", "DOUBLE", _I, Rule.UNIT),
    Column("condition", "VARCHAR", _I, Rule.NAME),
    Column("severity", "INTEGER", _I, Rule.COUNT),
    Column("recalibrator", "VARCHAR", _I, Rule.NAME),
    # the metrics: a REQUIRED_METRIC is NULL only with its reason in details["undefined"]
    Column("auroc", "DOUBLE", _M, Rule.REQUIRED_METRIC),
    Column("ece", "DOUBLE", _M, Rule.REQUIRED_METRIC),
    Column("brier", "DOUBLE", _M, Rule.REQUIRED_METRIC),
    Column("nll", "DOUBLE", _M, Rule.REQUIRED_METRIC),
    Column("sens_at_spec90", "DOUBLE", _M, Rule.METRIC),
    Column("sens_at_spec95", "DOUBLE", _M, Rule.METRIC),
    Column("run_key", "VARCHAR", _P, Rule.KEY),
    Column("config_hash", "VARCHAR", _P, Rule.HASH),
    Column("package_version", "VARCHAR", _P, Rule.FILLED),
    Column("encoder_revision", "VARCHAR", _P, Rule.FILLED),
    Column("dataset_revision", "VARCHAR", _P, Rule.FILLED),
    Column("anchors_version", "VARCHAR", _P, Rule.FILLED),
    Column("wall_time_s", "DOUBLE", _P, Rule.SECONDS),
    Column("created_at", "TIMESTAMP", _P, Rule.TIMESTAMP),
    Column("schema_version", "INTEGER", _P, Rule.VERSION),
    Column("details", "VARCHAR", _P, Rule.DETAILS),
)
#: Column name → its declaration.
RUNS_BY_NAME: dict[str, Column] = {c.name: c for c in RUNS_TABLE}


def _names(role: Role, sql: str | None = None) -> tuple[str, ...]:
    return tuple(c.name for c in RUNS_TABLE if c.role is role and sql in (None, c.sql))


#: The identity columns of one run record (table ``runs``), in order.
IDENTITY_COLUMNS: tuple[str, ...] = _names(Role.IDENTITY)
#: The identity columns by type: integers >= 0, numbers in (0, 1], non-empty strings.
INT_IDENTITY_COLUMNS: tuple[str, ...] = _names(Role.IDENTITY, "INTEGER")
FLOAT_IDENTITY_COLUMNS: tuple[str, ...] = _names(Role.IDENTITY, "DOUBLE")
TEXT_IDENTITY_COLUMNS: tuple[str, ...] = _names(Role.IDENTITY, "VARCHAR")
#: The identity columns of one cell of the grid (encoder × probe dataset).
CELL_COLUMNS: tuple[str, ...] = ("encoder", "dataset")
#: The metric columns of table ``runs`` (NULL allowed, see :data:`REQUIRED_METRICS`).
METRIC_COLUMNS: tuple[str, ...] = _names(Role.METRIC)
#: Metrics that may be NULL only with a reason in ``details["undefined"][metric]``.
REQUIRED_METRICS: tuple[str, ...] = tuple(
    c.name for c in RUNS_TABLE if c.rule is Rule.REQUIRED_METRIC
)
PROVENANCE_COLUMNS: tuple[str, ...] = _names(Role.PROVENANCE)
RUN_COLUMNS: tuple[str, ...] = tuple(c.name for c in RUNS_TABLE)
#: Provenance that differs between two honest computations of the same run.
VOLATILE_COLUMNS: tuple[str, ...] = ("wall_time_s", "created_at")
#: Table ``metrics`` groups the runs by every identity column but the seed.
GROUP_COLUMNS: tuple[str, ...] = tuple(c for c in IDENTITY_COLUMNS if c != "seed")
#: Columns two appends of the same ``run_key`` must agree on.
PAYLOAD_COLUMNS: tuple[str, ...] = tuple(c for c in RUN_COLUMNS if c not in VOLATILE_COLUMNS)
#: Table ``reliability``: one row per reliability-diagram bin of a clean, full-label run.
RELIABILITY_TABLE = RELIABILITY.name
RELIABILITY_COLUMNS: tuple[str, ...] = RELIABILITY.names
