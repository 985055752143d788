"""``crsbench run CONFIG`` and ``crsbench status CONFIG``."""

from __future__ import annotations

import signal
from pathlib import Path

import typer

from crsbench.cli.app import app, console, fail
from crsbench.core.errors import CrsbenchError


def _terminate(signum: int, frame: object) -> None:
    """SIGTERM (scancel, kill) behaves like Ctrl-C: the open transaction rolls back."""
    raise KeyboardInterrupt


def _config(path: Path, out: Path | None):
    from crsbench.config import load_config, validate_names, validate_paths

    cfg = load_config(path, output_dir=out)
    validate_paths(cfg)
    validate_names(cfg)
    return cfg


@app.command("run")
def run(
    config: Path = typer.Argument(..., help="Benchmark config (YAML)."),
    out: Path | None = typer.Option(None, "--out", help="Output directory (overrides config)."),
    executor: str = typer.Option("local", help="local or ray."),
    address: str | None = typer.Option(None, help="Ray cluster address (with --executor ray)."),
    force_new: bool = typer.Option(
        False, help="Move a store of another config (and its scores, analysis, report) aside."
    ),
    force: bool = typer.Option(
        False, help="Write into a non-empty folder crsbench did not create (never overwrites)."
    ),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bars."),
) -> None:
    """Plan the grid, extract through the cache, fit probes, record runs (resumable)."""
    from crsbench.runs.pipeline import run_benchmark
    from crsbench.runs.progress import RunProgress

    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        cfg = _config(config, out)
        with RunProgress(console) as bar:
            summary = run_benchmark(
                cfg,
                executor=executor,
                address=address,
                progress=progress,
                force_new=force_new,
                force=force,
                on_event=bar,
            )
    except CrsbenchError as exc:
        fail(str(exc))
        return
    except KeyboardInterrupt:
        fail(
            "interrupted: every committed cell is kept and the cell in flight was rolled "
            "back; run the same command again to resume.",
            code=130,
        )
        return
    finally:
        signal.signal(signal.SIGTERM, previous)
    console.print(
        f"wrote {summary.n_records_written} run records "
        f"({summary.n_records_total} in the grid) to {summary.out_dir / 'results.duckdb'}"
    )
    for stage, secs in summary.stage_seconds.items():
        console.print(f"  {stage:<22} {secs:8.1f} s")


@app.command("status")
def status(
    config: Path = typer.Argument(..., help="Benchmark config (YAML)."),
    out: Path | None = typer.Option(None, "--out", help="Output directory (overrides config)."),
) -> None:
    """Show which cells of a config are done and which remain."""
    from crsbench.runs.status import grid_status, grid_summary, quarantine_status

    try:
        cfg = _config(config, out)
        table = grid_status(cfg)
        quarantined = quarantine_status(cfg)
    except CrsbenchError as exc:
        fail(str(exc))
        return
    console.print(table)
    console.print(grid_summary(cfg), soft_wrap=True, markup=False)
    if quarantined:
        console.print("quarantined images (left out of every cell; see docs/runner.md):")
    for line in quarantined:
        console.print(line, markup=False, highlight=False, soft_wrap=True)
