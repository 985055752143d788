"""RELIABILITY J1: a 1M-row results store (slow; run with ``-m slow``). Prints its timings."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from store_helpers import HASH, make_frame

from crsbench.store import GROUP_COLUMNS, ResultsStore


@pytest.mark.slow
def test_million_row_store(tmp_path: Path) -> None:
    n, chunk = 1_000_000, 100_000
    timings: dict[str, float] = {}
    frame = make_frame(n, seed=7)
    with ResultsStore(tmp_path, HASH) as store:
        t0 = time.perf_counter()
        for start in range(0, n, chunk):
            assert store.append_frame(frame.iloc[start : start + chunk]) == chunk
        timings["bulk insert (validate + key + commit)"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        keys = store.done_keys()
        timings["done_keys (1M)"] = time.perf_counter() - t0
        probe = sorted(keys)[::100]
        t0 = time.perf_counter()
        assert len(store.has_keys(probe)) == 10_000
        timings["10k point lookups"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        groups = store.aggregate()
        timings["aggregate (GROUP BY)"] = time.perf_counter() - t0
        assert groups == frame.groupby(list(GROUP_COLUMNS)).ngroups
        t0 = time.perf_counter()
        audit = store.audit()
        timings["duplicate-key + provenance audit"] = time.perf_counter() - t0
        assert audit["rows"] == n and audit["duplicate_keys"] == 0
        t0 = time.perf_counter()
        store.export("parquet", tmp_path / "export")
        timings["parquet export (atomic)"] = time.perf_counter() - t0
    size_mb = (tmp_path / "results.duckdb").stat().st_size / 2**20
    print(f"\n1M-row store: {size_mb:.0f} MiB on disk")
    for name, secs in timings.items():
        print(f"  {name:40s} {secs:7.2f} s")
    assert timings["10k point lookups"] < 5 and timings["aggregate (GROUP BY)"] < 30
