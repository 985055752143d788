"""Benchmark of ``crsbench report`` from stored analyses against computing them, side by side.

On a copy of a results store (``--store``, e.g. the demo's), alternately: the report with no
stored analyses (``STORE/computed/`` removed first: scoring, the bootstrap and every analysis
computed, as every report did before they were stored, then stored) and the report that reads
the analyses stored by the run before it. Wall seconds of
:func:`crsbench.cli.report_command.write_report` (what ``crsbench report`` does) in this process, ``--runs`` of each (all listed), the median of each and their ratio. The
tables of every report are checked identical. Last line: ``speedup=<computing / reading>``.

    python benchmarks/report_stored.py --store /path/to/demo --replicates 2000 --runs 3
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from crsbench.cli.report_command import write_report
from crsbench.store.computed import COMPUTED_DIR
from crsbench.store.files import STORE_FILE


def _tables(out: Path) -> dict[str, bytes]:
    """The report's CSV tables (the provenance table names the time: left out)."""
    return {p.name: p.read_bytes() for p in (out / "tables").glob("*.csv")
            if p.name != "provenance.csv"}  # fmt: skip


def _report(store: Path, out: Path, n_replicates: int) -> float:
    t0 = time.perf_counter()
    write_report(store, out, n_replicates=n_replicates)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, required=True, help="Store directory (copied).")
    parser.add_argument("--replicates", type=int, default=2_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        store.mkdir()
        shutil.copy2(args.store / STORE_FILE, store / STORE_FILE)
        computing, reading, first = [], [], None
        for i in range(args.runs):
            shutil.rmtree(store / COMPUTED_DIR, ignore_errors=True)
            computing.append(_report(store, Path(tmp) / f"c{i}", args.replicates))
            reading.append(_report(store, Path(tmp) / f"r{i}", args.replicates))
            for out in (Path(tmp) / f"c{i}", Path(tmp) / f"r{i}"):
                first = first or _tables(out)
                if _tables(out) != first:
                    raise AssertionError(f"the report's tables differ in {out.name}")
            print(f"run {i + 1}: computing {computing[-1]:.1f} s, reading {reading[-1]:.1f} s")
    c, r = statistics.median(computing), statistics.median(reading)
    print(f"store {args.store}, {args.replicates:,} replicates, {args.runs} runs each")
    print("computing: " + ", ".join(f"{t:.1f}" for t in computing) + f" s (median {c:.1f})")
    print("reading:   " + ", ".join(f"{t:.1f}" for t in reading) + f" s (median {r:.1f})")
    print(f"speedup={c / r:.2f}")


if __name__ == "__main__":
    main()
