"""Run records and the results store (DuckDB); grid planning and executors come later.

Public API: :class:`ResultsStore`, :class:`RunRecord`, :class:`RunIdentity`,
:func:`make_run_key`, :class:`StoreLock`. Importing this package imports duckdb and pyarrow
but never torch.
"""

from __future__ import annotations

from crsbench.runs.lock import StoreLock, StoreLockWarning, check_local_filesystem
from crsbench.runs.records import (
    IDENTITY_COLUMNS,
    METRIC_COLUMNS,
    RUN_COLUMNS,
    SCHEMA_VERSION,
    RunIdentity,
    RunRecord,
    make_run_key,
)
from crsbench.runs.store import DB_NAME, GROUP_COLUMNS, ResultsStore

__all__ = [
    "DB_NAME",
    "GROUP_COLUMNS",
    "IDENTITY_COLUMNS",
    "METRIC_COLUMNS",
    "RUN_COLUMNS",
    "SCHEMA_VERSION",
    "ResultsStore",
    "RunIdentity",
    "RunRecord",
    "StoreLock",
    "StoreLockWarning",
    "check_local_filesystem",
    "make_run_key",
]
