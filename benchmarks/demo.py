"""How long ``crsbench demo`` takes as a user runs it: a fresh process and output folder each time.

The slow test ``tests/integration/test_demo_stages.py`` checks what the demo produces; its time
depends on the host and the load, so it is measured here::

    python benchmarks/demo.py [--runs 3]

Each run's printed time (from the process start) and its process wall time are listed with the
load average before it. Last line: ``demo_median_s=<median printed> budget_s=<DEMO_BUDGET_S>
ratio=<median / budget>``.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from crsbench.cli.demo_workflow import DEMO_BUDGET_S

_PRINTED = re.compile(r"demo finished in ([0-9.]+) s")


def one_demo(out: Path) -> tuple[float, float]:
    """Run the demo into ``out``; its printed seconds and its process wall seconds."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "crsbench.cli", "demo", "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"crsbench demo failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    match = _PRINTED.search(proc.stdout)
    if match is None:
        raise SystemExit("crsbench demo printed no 'demo finished in' line")
    return float(match.group(1)), wall


def main(argv: list[str] | None = None) -> int:
    """Run the demo ``--runs`` times; print every run and the median against the budget."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    printed: list[float] = []
    print(f"{'run':>3s} {'printed s':>9s} {'wall s':>7s}  load average before")
    for i in range(1, args.runs + 1):
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        with tempfile.TemporaryDirectory(prefix="crsbench-demo-") as tmp:
            seconds, wall = one_demo(Path(tmp) / "demo")
        printed.append(seconds)
        print(f"{i:3d} {seconds:9.1f} {wall:7.1f}  {load}", flush=True)
    median = statistics.median(printed)
    print(
        f"demo_median_s={median:.1f} budget_s={DEMO_BUDGET_S:.0f} ratio={median / DEMO_BUDGET_S:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
