"""How long ``crsbench demo`` takes as a user runs it: a fresh process and output folder each time.

The slow test ``tests/integration/test_demo_stages.py`` checks what the demo produces; its time
depends on the host and the load, so it is measured here::

    python benchmarks/demo.py [--runs 3] [--against REV]

Each run's printed time (from the process start) and its process wall time are listed with the
load average before it, the host's speed just before it (``host s``: the best of three timings of
a fixed single-threaded reference, pure Python and a small matrix product; lower is faster; this
machine's hosts differ about 2x and one host's speed moves within the hour) and the share of the
CPU time the hypervisor gave to other guests during it (``steal %``, from /proc/stat). Last line: ``demo_median_s=<median printed> budget_s=<DEMO_BUDGET_S>
ratio=<median / budget>``.

``--against REV`` also times the demo of another commit (checked out into a temporary git
worktree, run with the same interpreter), alternating old and new run by run so both see the
same host speed, and adds ``against_median_s=<old median> speedup=<old median / new median>``.
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


def one_demo(out: Path, src: Path | None = None) -> tuple[float, float]:
    """Run the demo into ``out`` (the crsbench of ``src`` when given: its ``src/`` first on
    the path); its printed seconds and its process wall seconds."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "crsbench.cli", "demo", "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"crsbench demo failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    match = _PRINTED.search(proc.stdout)
    if match is None:
        raise SystemExit("crsbench demo printed no 'demo finished in' line")
    return float(match.group(1)), wall


def host_reference_s() -> float:
    """Seconds of a fixed single-threaded reference (best of three): a pure-Python loop and
    small float64 matrix products, under a second on this machine."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    a = np.random.default_rng(0).standard_normal((160, 160))
    best = float("inf")
    with threadpool_limits(1):
        for _ in range(3):
            t0 = time.perf_counter()
            total = 0
            for i in range(10_000_000):
                total += i & 7
            for _ in range(1_500):
                a = np.tanh(a @ a / 160.0)
            best = min(best, time.perf_counter() - t0)
    return best


def cpu_counters() -> list[int] | None:
    """The first line of /proc/stat as numbers (None where there is none)."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            return [int(x) for x in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None


def steal_share(before: list[int] | None, after: list[int] | None) -> str:
    """Percent of CPU time stolen by the hypervisor between two :func:`cpu_counters`."""
    if before is None or after is None or len(before) < 8:
        return "-"
    delta = [b - a for a, b in zip(before, after, strict=False)]
    total = sum(delta[:8])
    return f"{100 * delta[7] / total:.1f}" if total > 0 else "-"


def timed(src: Path | None) -> tuple[float, float, str]:
    """One demo of ``src``'s crsbench (None: the installed one) in a fresh folder; printed
    seconds, wall seconds, and what was around it: the load average before it, the host
    reference's seconds and the steal share during it."""
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    host = host_reference_s()
    before = cpu_counters()
    with tempfile.TemporaryDirectory(prefix="crsbench-demo-") as tmp:
        seconds, wall = one_demo(Path(tmp) / "demo", src)
    return seconds, wall, f"{host:6.2f} {steal_share(before, cpu_counters()):>7s}  {load}"


def old_tree(rev: str, into: Path) -> Path:
    """A detached git worktree of ``rev`` in ``into``; its ``src`` folder."""
    repo = Path(__file__).resolve().parents[1]
    subprocess.run(["git", "-C", str(repo), "worktree", "add", "--detach", "-f", str(into), rev],
                   check=True, capture_output=True)  # fmt: skip
    return into / "src"


def main(argv: list[str] | None = None) -> int:
    """Run the demo ``--runs`` times (alternating with ``--against``'s tree when given); print
    every run and the median against the budget."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--against", default=None, help="a git revision to time side by side")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="crsbench-old-") as tmp:
        old_src = old_tree(args.against, Path(tmp) / "tree") if args.against else None
        trees = [("new", None)] + ([(args.against, old_src)] if old_src else [])
        printed: dict[str, list[float]] = {name: [] for name, _ in trees}
        print(f"{'run':>3s} {'tree':>10s} {'printed s':>9s} {'wall s':>7s} {'host s':>6s} "
              f"{'steal %':>7s}  load average before")  # fmt: skip
        for i in range(1, args.runs + 1):
            for name, src in trees if i % 2 else trees[::-1]:
                seconds, wall, load = timed(src)
                printed[name].append(seconds)
                print(f"{i:3d} {name[:10]:>10s} {seconds:9.1f} {wall:7.1f}  {load}", flush=True)
        if old_src is not None:
            repo = Path(__file__).resolve().parents[1]
            subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force",
                            str(old_src.parent)], check=False, capture_output=True)  # fmt: skip
    median = statistics.median(printed["new"])
    line = f"demo_median_s={median:.1f} budget_s={DEMO_BUDGET_S:.0f} ratio={median / DEMO_BUDGET_S:.2f}"
    if args.against:
        old = statistics.median(printed[args.against])
        line += f" against_median_s={old:.1f} speedup={old / median:.2f}"
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
