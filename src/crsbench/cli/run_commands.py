"""``crsbench run CONFIG``, ``crsbench status CONFIG`` and ``crsbench doctor CONFIG``."""

from __future__ import annotations

import signal
from pathlib import Path

import typer

from crsbench.cli.app import app, console, fail
from crsbench.cli.output import (
    EXIT_CODES_HELP,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    QUIET_OPTION,
    VERBOSE_OPTION,
    print_json,
    print_stage_times,
    print_table,
    verbosity,
)
from crsbench.core.errors import CrsbenchError
from crsbench.core.verbosity import NORMAL, QUIET
from crsbench.store.files import STORE_FILE


def _terminate(signum: int, frame: object) -> None:
    """SIGTERM (scancel, kill) behaves like Ctrl-C: the open transaction rolls back."""
    raise KeyboardInterrupt


def _config(path: Path, out: Path | None):
    """Parse ``path`` and check its names; paths and weights are the preflight's job."""
    from crsbench.config import load_config, validate_names

    cfg = load_config(path, output_dir=out)
    validate_names(cfg)
    return cfg


@app.command("run", epilog=EXIT_CODES_HELP)
def run(
    config: Path = typer.Argument(..., help="Benchmark config (YAML)."),
    out: Path | None = typer.Option(None, "--out", help="Output directory (overrides config)."),
    executor: str = typer.Option("local", help="local or ray."),
    address: str | None = typer.Option(None, help="Ray cluster address (with --executor ray)."),
    jobs: int | None = typer.Option(
        None,
        "--jobs",
        min=1,
        help="Worker processes fitting the probes (local executor; default: every available "
        "core). The records do not depend on it.",
    ),
    force_new: bool = typer.Option(
        False, help="Move a store of another config (and its scores, analysis, report) aside."
    ),
    force: bool = typer.Option(
        False, help="Write into a non-empty folder crsbench did not create (never overwrites)."
    ),
    skip_missing: bool = typer.Option(
        False,
        "--skip-missing",
        help="Run the cells whose data and weights are present; record the others as skipped.",
    ),
    progress: bool = typer.Option(
        True, "--progress/--no-progress", help="Progress bars (drawn only on a terminal)."
    ),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="Real architectures at real size with seeded random weights, a sample of each "
        "dataset; prints each encoder's img/s and peak memory (output: OUTPUT_DIR-dry-run).",
    ),
    dry_run_images: int = typer.Option(
        64, "--dry-run-images", help="Images per dataset in a --dry-run.", min=8
    ),
    update_weights_lock: bool = typer.Option(
        False,
        "--update-weights-lock",
        help="Accept weights whose sha256 differs from OUTPUT_DIR/weights.lock and record them.",
    ),
    quiet: bool = QUIET_OPTION,
    verbose: bool = VERBOSE_OPTION,
) -> None:
    """Check inputs, plan the grid, extract through the cache, fit probes, record runs (resumable).

    Before any work every dataset root and every encoder's weights are checked; everything
    missing is listed at once with where to put it (see `crsbench doctor`).
    """
    from crsbench.runs.pipeline import RunOptions, run_benchmark
    from crsbench.runs.progress import RunProgress

    level = verbosity(quiet, verbose)
    bars = progress and level > QUIET and console.is_terminal
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        cfg = _config(config, out)
        if dry_run:
            from crsbench.runs.dryrun import dry_run_config

            cfg = dry_run_config(cfg, dry_run_images, out)
        with RunProgress(console, verbosity=level, bars=progress) as bar:
            opts = RunOptions(executor=executor, address=address, progress=bars, jobs=jobs,
                              force_new=force_new, force=force, on_event=bar,
                              skip_missing=skip_missing,
                              update_weights_lock=update_weights_lock)  # fmt: skip
            summary = run_benchmark(cfg, opts)
        speeds = _dry_run_speeds(cfg, summary.out_dir) if dry_run else []
    except CrsbenchError as exc:
        fail(exc)
        return
    except KeyboardInterrupt:
        fail(
            "interrupted: every committed cell is kept and the cell in flight was rolled "
            "back; run the same command again to resume.",
            code=EXIT_INTERRUPTED,
        )
        return
    finally:
        signal.signal(signal.SIGTERM, previous)
    typer.echo(
        f"wrote {summary.n_records_written} run records "
        f"({summary.n_records_total} in the grid) to {summary.out_dir / STORE_FILE}"
    )
    if summary.skipped_cells:
        typer.echo(f"skipped {len(summary.skipped_cells)} cells (see `crsbench status`):")
        for c in summary.skipped_cells:
            typer.echo(f"  {c['encoder']} × {c['dataset']}: {c['reason']}")
    if level >= NORMAL:
        print_stage_times(console, summary.stage_seconds)
    if dry_run:
        print_table(console, speeds, {"encoder": "encoder", "input_size": "input px",
                                      "params_m": "params (M)", "img_per_s": "img/s",
                                      "peak_mem_mb": "peak MiB", "memory_kind": "memory"},
                    title="dry run: forward throughput with random weights at true size",
                    right=("input_size", "params_m", "img_per_s", "peak_mem_mb"),
                    whole=("encoder",))  # fmt: skip
        typer.echo(
            "dry run img/s: " + ", ".join(f"{r['encoder']} {r['img_per_s']:g}" for r in speeds)
        )
        typer.echo("dry run: random weights, not results; score/report need --dry-run-ok")


def _dry_run_speeds(cfg, out_dir: Path) -> list[dict]:
    """Each encoder's forward throughput and peak memory, also written to last_run.json."""
    import json

    from crsbench.core.diskio import write_text_atomic
    from crsbench.runs.dryrun import dry_run_throughputs
    from crsbench.store.files import LAST_RUN_FILE

    speeds = [t.as_dict() for t in dry_run_throughputs(cfg)]
    for row in speeds:
        row["img_per_s"] = round(row["img_per_s"], 2)
    path = out_dir / LAST_RUN_FILE
    summary = json.loads(path.read_text(encoding="utf-8"))
    summary["dry_run"] = {"throughput": speeds}
    write_text_atomic(path, json.dumps(summary, indent=2))
    return speeds


@app.command("status", epilog=EXIT_CODES_HELP)
def status(
    config: Path = typer.Argument(..., help="Benchmark config (YAML)."),
    out: Path | None = typer.Option(None, "--out", help="Output directory (overrides config)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Show which cells of a config are done, which remain and which the last run skipped."""
    from crsbench.runs.status import grid_status, grid_summary, quarantine_status

    try:
        cfg = _config(config, out)
        title, rows = grid_status(cfg)
        quarantined = quarantine_status(cfg)
    except CrsbenchError as exc:
        fail(exc)
        return
    if as_json:
        print_json({"title": title, "summary": grid_summary(cfg), "cells": rows,
                    "quarantined": quarantined})  # fmt: skip
        return
    columns = {k: k for k in ("regime", "encoder", "dataset", "done", "planned", "state")}
    if any(r["reason"] for r in rows):
        columns["reason"] = "reason"
    print_table(console, rows, columns, title=title, right=("done", "planned"))
    typer.echo(grid_summary(cfg))
    if quarantined:
        typer.echo("quarantined images (left out of every cell; see docs/runner.md):")
    for line in quarantined:
        typer.echo(line)


@app.command("doctor", epilog=EXIT_CODES_HELP)
def doctor(
    config: Path = typer.Argument(..., help="Benchmark config (YAML)."),
    out: Path | None = typer.Option(None, "--out", help="Output directory (overrides config)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of text."),
    hub_check: bool = typer.Option(
        True, "--hub-check/--no-hub-check", help="One short request to the hub when online."
    ),
) -> None:
    """The preflight of `crsbench run`, without running: what is missing and where to put it.

    Exits 1 when anything is missing, 0 when the run can start.
    """
    from crsbench.runs.preflight import preflight

    try:
        report = preflight(_config(config, out), hub_check=hub_check)
    except CrsbenchError as exc:
        fail(exc)
        return
    if as_json:
        print_json(report.as_dict())
    else:
        for line in report.lines():
            typer.echo(line)
    if not report.ok:
        raise typer.Exit(EXIT_FAILED)
