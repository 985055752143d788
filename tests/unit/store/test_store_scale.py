"""RELIABILITY J1: a 1M-row results store (slow; run with ``-m slow``).

Correctness at scale only; the timings of each operation are printed by
``benchmarks/timings.py --store-rows 1000000``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from store_helpers import HASH, make_frame

from crsbench.store import GROUP_COLUMNS, ResultsStore


@pytest.mark.slow
def test_million_row_store(tmp_path: Path) -> None:
    n, chunk = 1_000_000, 100_000
    frame = make_frame(n, seed=7)
    with ResultsStore(tmp_path, HASH) as store:
        for start in range(0, n, chunk):
            assert store.append_frame(frame.iloc[start : start + chunk]) == chunk
        keys = store.done_keys()
        assert len(keys) == n
        probe = sorted(keys)[::100]
        assert len(store.has_keys(probe)) == 10_000
        assert store.aggregate() == frame.groupby(list(GROUP_COLUMNS)).ngroups
        audit = store.audit()
        assert audit["rows"] == n and audit["duplicate_keys"] == 0
        store.export("parquet", tmp_path / "export")
    assert (tmp_path / "export" / "runs.parquet").is_file()
