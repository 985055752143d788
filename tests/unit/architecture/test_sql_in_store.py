"""Only the store writes SQL: no module outside crsbench/store opens the store file with duckdb
or hands the store a query of its own (the main-protocol filter lives in the store's reader)."""

from __future__ import annotations

import re
from pathlib import Path

import crsbench

ROOT = Path(crsbench.__file__).parent
_SQL_ACCESS = re.compile(r"^\s*(import duckdb|from duckdb)|read_queries\(", re.M)


def test_no_module_outside_the_store_runs_sql() -> None:
    found = sorted(
        str(path.relative_to(ROOT))
        for path in ROOT.rglob("*.py")
        if "store" not in path.relative_to(ROOT).parts[:1]
        and _SQL_ACCESS.search(path.read_text(encoding="utf-8"))
    )
    assert found == []
