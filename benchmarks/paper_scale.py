"""Paper scale, simulated: write a store of the paper's size and time score, analyze, report.

The paper config's planner (:func:`crsbench.runs.plan.plan_cells` on
``resources/configs/paper.yaml``: 43 cells, 5 seeds, 5 fractions, 18 conditions, 4 shift
targets, three probes, four recalibrators, four layers) gives every run identity; the store is
written through the real writer with planted metrics and per-sample predictions
(:func:`crsbench.testing.planned_store.write_planned_store`) for the rows the runner keeps
them for. ``--scale`` multiplies the **test-set sizes** (every evaluation split: test,
validation, shift targets; :data:`~crsbench.testing.planned_store.PAPER_SIZES`); the record
count stays the plan's. ``--encoders N`` keeps the first N encoders of the panel (fewer
records, for a quick check). Each step runs in its own process; its wall time and peak RSS
(the larger of the largest process's ``ru_maxrss`` and the sampled proportional set size of the
step's process tree) are measured::

    python benchmarks/paper_scale.py [--scale 1/16 --scale 1/4 --scale 1] [--replicates 10000]

Prints one table row per scale and whether each goal is met on this machine.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import re
import shutil
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

#: Goals on the reference machine (issue #31): seconds, MiB.
GOALS = {"analyze_s": 600.0, "report_s": 60.0, "peak_mib": 8192.0, "store_mib": 2048.0}
COLUMNS = ("scale", "records", "predictions", "store MiB", "write s", "score s", "analyze s",
           "report s", "peak MiB write/score/analyze/report", "load1")  # fmt: skip
STEPS = ("score", "analyze", "report")


def planned_frame(n_encoders: int):
    """The paper config's planned run identities (first ``n_encoders`` encoders) as a
    frame, each probe dataset's (task, label names), and the plan the store records."""
    from importlib.resources import files

    import pandas as pd

    from crsbench.config import load_config
    from crsbench.datasets import DATASETS
    from crsbench.runs.plan import plan_cells, recorded_plan
    from crsbench.store.stored_plan import StoredPlan

    cfg = load_config(str(files("crsbench.resources").joinpath("configs/paper.yaml")))
    modalities = {n: DATASETS.get(n).card.modality for n in cfg.datasets}
    cells = plan_cells(cfg, modalities)
    keep = list(dict.fromkeys(c.encoder for c in cells))[:n_encoders]
    rows = [i.as_dict() for c in cells if c.encoder in keep for i in c.identities]
    cards = {d: (DATASETS.get(d).card.task, tuple(DATASETS.get(d).card.label_names))
             for d in cfg.probe_datasets}  # fmt: skip
    plan = StoredPlan.ordered(c for c in recorded_plan(cfg, modalities) if c.encoder in keep)
    return pd.DataFrame(rows), cards, plan


def write_step(store: Path, scale: float, n_encoders: int) -> None:
    """Plan, plant and write the store (run in its own process); print its counts as JSON."""
    from crsbench.testing.planned_store import write_planned_store

    planned, cards, plan = planned_frame(n_encoders)
    written = write_planned_store(store, planned, cards, scale=scale, plan=plan)
    print(json.dumps({"planned": len(planned), "records": written.n_records,
                      "predictions": written.n_predictions}))  # fmt: skip


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (Linux ``/proc``; children of every thread)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for task in Path(f"/proc/{p}/task").glob("*/children"):
            try:
                todo += [int(c) for c in task.read_text().split()]
            except OSError:
                continue
    return out


def tree_pss_mib(pid: int) -> float:
    """Proportional set size of ``pid``'s process tree in MiB: the memory the tree really
    holds (pages a forked worker shares with its parent are counted once)."""
    total = 0
    for p in _tree(pid):
        try:
            text = Path(f"/proc/{p}/smaps_rollup").read_text()
        except OSError:
            continue
        total += next((int(line.split()[1]) for line in text.splitlines()
                       if line.startswith("Pss:")), 0)  # fmt: skip
    return total / 1024


class PeakSampler:
    """The largest :func:`tree_pss_mib` of a process tree, sampled every ``every`` seconds."""

    def __init__(self, pid: int, every: float = 1.0) -> None:
        import threading

        self.pid, self.every, self.peak = pid, every, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.peak = max(self.peak, tree_pss_mib(self.pid))

    def stop(self) -> float:
        """Stop sampling; the peak in MiB."""
        self._stop.set()
        self._thread.join()
        return self.peak


def run_child(cmd: list[str], profile: Path | None = None) -> tuple[float, float, str, str]:
    """Run ``cmd`` (a Python command line after the interpreter); return wall seconds, peak
    memory in MiB (the larger of the largest process's RSS, ``ru_maxrss`` from ``wait4``, and
    the process tree's sampled proportional set size: a step and its bootstrap workers
    together), its stdout and its stderr. Raises on a non-zero exit."""
    prof = ["-m", "cProfile", "-o", str(profile)] if profile else []
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, *prof, *cmd], stdout=out, stderr=err,
                                env=_child_env())  # fmt: skip
        sampler = PeakSampler(proc.pid)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        tree_peak = sampler.stop()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        if proc.returncode:
            raise RuntimeError(f"{' '.join(cmd[:3])} failed ({proc.returncode}):\n"
                               f"{err.read()[-3000:]}")  # fmt: skip
        return wall, max(usage.ru_maxrss / 1024, tree_peak), out.read(), err.read()


def _child_env() -> dict[str, str]:
    """This environment with this process's crsbench first on the path of every child."""
    import crsbench

    src = str(Path(crsbench.__file__).resolve().parents[1])
    rest = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": src + (os.pathsep + rest if rest else "")}


def step_command(step: str, store: Path, replicates: int, other: int) -> list[str]:
    """The CLI command of ``step``: analyze and report at ``replicates`` (their shared default,
    so the report reads what analyze stored, as a user's two commands do), score at ``other``."""
    reps = other if step == "score" else replicates
    out = ["--out", str(store / step), "--verbose"]
    return ["-m", "crsbench.cli", step, "--store", str(store), "--replicates", str(reps), *out]


def analysis_times(stderr: str) -> dict[str, float]:
    """Seconds per analysis from a step's ``--verbose`` log (``analysis NAME: S s``)."""
    found = re.findall(r"analysis (\w+): ([0-9.]+) s", stderr)
    return {name: float(s) for name, s in found}


def dominant(parts: dict[str, float], top: int = 3) -> str:
    """The ``top`` analyses by time, as ``name s``."""
    ranked = sorted(parts.items(), key=lambda kv: -kv[1])[:top]
    return ", ".join(f"{name} {s:.0f} s" for name, s in ranked)


def measure_scale(scale: float, args: argparse.Namespace, root: Path) -> dict:
    """Write the store at ``scale`` and time each step; return the table row."""
    store = root / f"scale-{scale:g}"
    prof = (lambda s: args.profile / f"{s}-{scale:g}.prof") if args.profile else (lambda s: None)
    script = [str(Path(__file__).resolve()), "--write-store", str(store), "--scale", str(scale),
              "--encoders", str(args.encoders)]  # fmt: skip
    wall, peak, out, _ = run_child(script, prof("write"))
    counts = json.loads(out.strip().splitlines()[-1])
    row = {"scale": _label(scale), **counts, "write_s": wall, "peak": [peak],
           "store_mib": _mib(store), "load": [os.getloadavg()[0]]}  # fmt: skip
    for step in STEPS:
        row[f"{step}_s"] = float("nan")
        if step not in args.steps:
            continue
        cmd = step_command(step, store, args.replicates, args.other_replicates)
        wall, peak, _, err = run_child(cmd, prof(step))
        row[f"{step}_s"], row["peak"] = wall, [*row["peak"], peak]
        row[f"{step}_parts"] = analysis_times(err)
        row["load"].append(os.getloadavg()[0])
    if not args.keep:
        shutil.rmtree(store)
    return row


def _mib(store: Path) -> float:
    return sum(p.stat().st_size for p in store.glob("results.duckdb*")) / 2**20


def _label(scale: float) -> str:
    f = Fraction(scale).limit_denominator(1000)
    return str(f) if abs(float(f) - scale) < 1e-12 else f"{scale:g}"


def _s(v: float) -> str:
    return f"{v:.1f}" if v == v else "-"  # NaN: step not run


def format_row(r: dict) -> list[str]:
    """The table cells of one measured row (:data:`COLUMNS`)."""
    return [r["scale"], f"{r['records']:,}", f"{r['predictions']:,}", f"{r['store_mib']:.1f}",
            _s(r["write_s"]), _s(r["score_s"]), _s(r["analyze_s"]), _s(r["report_s"]),
            " / ".join(f"{p:.0f}" for p in r["peak"]),
            f"{min(r['load']):.1f}-{max(r['load']):.1f}"]  # fmt: skip


def print_table(rows: list[dict]) -> None:
    """Markdown table of :data:`COLUMNS`, one row per scale."""
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for r in rows:
        print("| " + " | ".join(format_row(r)) + " |")


def goal_lines(row: dict) -> list[str]:
    """Whether each goal is met at ``row``'s scale, with the margin."""
    got = {"analyze_s": row["analyze_s"], "report_s": row["report_s"],
           "peak_mib": max(row["peak"]), "store_mib": row["store_mib"]}  # fmt: skip
    got = {k: v for k, v in got.items() if v == v}  # steps not run are NaN
    return [f"goal {k} <= {GOALS[k]:g}: {v:.1f} {'met' if v <= GOALS[k] else 'MISSED'} "
            f"({v / GOALS[k]:.2f}x)" for k, v in got.items()]  # fmt: skip


def print_profiles(folder: Path, top: int = 12) -> None:
    """The top functions (own time) of every profile written under ``folder``."""
    for path in sorted(folder.glob("*.prof")):
        print(f"\n== {path.stem}: top {top} by own time")
        pstats.Stats(str(path)).sort_stats("tottime").print_stats(top)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command line (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", action="append", type=lambda s: float(Fraction(s)),
                    help="Test-set size factor (repeatable; default 1/16, 1/4 and 1).")  # fmt: skip
    ap.add_argument("--encoders", type=int, default=15, help="First N encoders of the panel.")
    ap.add_argument("--replicates", type=int, default=10_000,
                    help="analyze and report --replicates (their CLI default).")  # fmt: skip
    ap.add_argument("--other-replicates", type=int, default=2_000,
                    help="score --replicates (its CLI default).")  # fmt: skip
    ap.add_argument("--steps", type=lambda s: tuple(s.split(",")), default=STEPS,
                    help="Steps to time, of score,analyze,report (default all).")  # fmt: skip
    ap.add_argument("--out", type=Path, help="Folder of the stores (default: a temp folder).")
    ap.add_argument("--keep", action="store_true", help="Keep each store and its outputs.")
    ap.add_argument("--profile", type=Path, help="Profile every step with cProfile into DIR.")
    ap.add_argument("--json", type=Path, help="Also write the rows as JSON to this file.")
    ap.add_argument("--write-store", type=Path, help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run every scale and print the table and the goals of the largest."""
    args = parse_args(argv)
    scales = args.scale or [1 / 16, 1 / 4, 1.0]
    if args.write_store:
        write_step(args.write_store, scales[0], args.encoders)
        return 0
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    root = args.out or Path(tempfile.mkdtemp(prefix="crsbench-paper-scale-"))
    print(f"cpus={os.cpu_count()} load_at_start={os.getloadavg()[0]:.1f} root={root}")
    rows = []
    for scale in scales:
        rows.append(measure_scale(scale, args, root))
        print(f"scale {rows[-1]['scale']} done: {format_row(rows[-1])}", flush=True)
        parts = rows[-1].get("analyze_parts") or {}
        print(f"scale {rows[-1]['scale']} analyze: {dominant(parts, top=6)}", flush=True)
    print_table(rows)
    for row in rows:
        print(f"scale {row['scale']}: " + "; ".join(goal_lines(row)))
        for step in STEPS:
            if row.get(f"{step}_parts"):
                print(f"scale {row['scale']} {step} dominated by: {dominant(row[step + '_parts'])}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    if args.profile:
        print_profiles(args.profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
