"""The seed-averaging guard: a group's runs must share package version and revisions."""

from __future__ import annotations

import duckdb

from crsbench.core.errors import StoreError
from crsbench.store.columns import GROUP_COLUMNS


def refuse_mixed_provenance(con: duckdb.DuckDBPyConnection) -> None:
    """Refuse a seed group whose runs mix package versions or encoder/dataset revisions."""
    mixed = con.execute(
        f"SELECT {', '.join(GROUP_COLUMNS)} FROM runs GROUP BY ALL HAVING "
        "count(DISTINCT package_version) > 1 OR count(DISTINCT encoder_revision) > 1 "
        "OR count(DISTINCT dataset_revision) > 1 LIMIT 3"
    ).fetchall()
    if mixed:
        raise StoreError(
            "refusing to average seeds across different package versions or encoder/"
            f"dataset revisions, e.g. group {mixed[0]}; pass allow_mixed=True to force."
        )
