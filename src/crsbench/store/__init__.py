"""The results store: one DuckDB file per run's output directory.

- :mod:`~crsbench.store.columns`: the column names (identity, metrics, provenance), defined once;
- :mod:`~crsbench.store.records`: :class:`RunIdentity`, :class:`RunRecord`, :func:`make_run_key`;
- :mod:`~crsbench.store.run_result` and :mod:`~crsbench.store.details`: :class:`RunResult`,
  what cell evaluation returns, and its typed :class:`RunDetails`;
- :mod:`~crsbench.store.writer`: :class:`ResultsStore`, the single writer (with
  :mod:`~crsbench.store.lock`, :mod:`~crsbench.store.validate`, :mod:`~crsbench.store.schema`);
- :mod:`~crsbench.store.reader`: the one read-only reader and :func:`select_runs`;
- :mod:`~crsbench.store.predictions`, :mod:`~crsbench.store.reliability`,
  :mod:`~crsbench.store.quarantine`: the derived tables; :mod:`~crsbench.store.export` and
  :mod:`~crsbench.store.repair`: export and rebuild.

This package imports only :mod:`crsbench.core`, duckdb, pyarrow, pandas and numpy (an
import-linter contract keeps it so); importing it never imports torch, and the public names
below load their submodule on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crsbench.store.cards import CardFacts
    from crsbench.store.columns import (
        GROUP_COLUMNS,
        IDENTITY_COLUMNS,
        METRIC_COLUMNS,
        RELIABILITY_COLUMNS,
        RUN_COLUMNS,
        SCHEMA_VERSION,
    )
    from crsbench.store.details import RunDetails
    from crsbench.store.files import LAST_RUN_FILE, STORE_FILE
    from crsbench.store.lock import StoreLock, StoreLockWarning, check_local_filesystem
    from crsbench.store.reader import (
        load_runs,
        read_card_facts,
        read_meta,
        read_plan,
        read_queries,
        read_reliability,
        read_tables,
        select_runs,
        skipped_cells,
    )
    from crsbench.store.records import RunIdentity, RunRecord, make_run_key
    from crsbench.store.run_result import RunResult
    from crsbench.store.stored_plan import PlannedCell, StoredPlan
    from crsbench.store.writer import ResultsStore

#: Public name → the submodule that defines it. Loaded on first use, so that importing
#: ``crsbench.store.files`` (the CLI does) never loads duckdb, pyarrow or pandas.
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(
        ("GROUP_COLUMNS", "IDENTITY_COLUMNS", "METRIC_COLUMNS", "RELIABILITY_COLUMNS",
         "RUN_COLUMNS", "SCHEMA_VERSION"), "columns"),
    **dict.fromkeys(("LAST_RUN_FILE", "STORE_FILE"), "files"),
    **dict.fromkeys(("StoreLock", "StoreLockWarning", "check_local_filesystem"), "lock"),
    **dict.fromkeys(
        ("load_runs", "read_card_facts", "read_meta", "read_plan", "read_queries", "read_reliability", "read_tables",
         "select_runs", "skipped_cells"), "reader"),
    **dict.fromkeys(("RunIdentity", "RunRecord", "make_run_key"), "records"),
    "ResultsStore": "writer",
    "RunDetails": "details",
    "RunResult": "run_result",
    "CardFacts": "cards",
    **dict.fromkeys(("PlannedCell", "StoredPlan"), "plan"),
}  # fmt: skip


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'crsbench.store' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"crsbench.store.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


__all__ = [
    "CardFacts",
    "GROUP_COLUMNS",
    "IDENTITY_COLUMNS",
    "LAST_RUN_FILE",
    "METRIC_COLUMNS",
    "RELIABILITY_COLUMNS",
    "RUN_COLUMNS",
    "SCHEMA_VERSION",
    "STORE_FILE",
    "PlannedCell",
    "ResultsStore",
    "RunDetails",
    "RunIdentity",
    "StoredPlan",
    "RunRecord",
    "RunResult",
    "StoreLock",
    "StoreLockWarning",
    "check_local_filesystem",
    "load_runs",
    "make_run_key",
    "read_card_facts",
    "read_meta",
    "read_plan",
    "read_queries",
    "read_reliability",
    "read_tables",
    "select_runs",
    "skipped_cells",
]
