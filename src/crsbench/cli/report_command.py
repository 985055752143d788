"""``crsbench report``: the self-contained HTML report of a results store."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import typer

from crsbench.cli.analysis_commands import DRY_RUN_OK_OPTION, load_store_runs
from crsbench.cli.app import app, fail
from crsbench.cli.output import (
    EXIT_CODES_HELP,
    EXIT_INTERRUPTED,
    INTERVAL_OPTION,
    JOBS_OPTION,
    QUIET_OPTION,
    VERBOSE_OPTION,
    quick_look_note,
    replicates_option,
    seed_option,
    verbosity,
)
from crsbench.protocol import BOOTSTRAP_REPLICATES
from crsbench.report.data import ReportData
from crsbench.store.outputs import claimed_folder


def report_data(
    store: str | Path,
    *,
    runs: pd.DataFrame | None = None,
    n_replicates: int = BOOTSTRAP_REPLICATES,
    seed: int = 0,
    anchors: Any = None,
    calibration_cell: tuple[str, str] | None = None,
    interval: str = "test-patients",
    n_jobs: int | None = None,
    say: Callable[[str], None] | None = None,
) -> ReportData:
    """The report's tables of ``store``: its stored analyses for these parameters (computed
    and stored first when absent or stale, :func:`crsbench.stats.compute.stored_analyses`,
    ``say`` told which) read by :func:`crsbench.report.compute_report_data`."""
    from crsbench.report import compute_report_data
    from crsbench.stats.compute import stored_analyses
    from crsbench.store import load_runs

    runs = load_runs(store) if runs is None else runs
    analyses, _ = stored_analyses(store, runs, n_replicates, seed, anchors, interval=interval,
                                  n_jobs=n_jobs, say=say)  # fmt: skip
    with np.errstate(all="ignore"):
        return compute_report_data(store, analyses, calibration_cell=calibration_cell)


def write_report(
    store: str | Path,
    out: str | Path,
    *,
    runs: pd.DataFrame | None = None,
    n_replicates: int = BOOTSTRAP_REPLICATES,
    seed: int = 0,
    anchors: Any = None,
    calibration_cell: tuple[str, str] | None = None,
    interval: str = "test-patients",
    n_jobs: int | None = None,
    say: Callable[[str], None] | None = None,
) -> Path:
    """What ``crsbench report`` does: the stored analyses of ``store`` (computed and stored
    first when absent or stale; ``say`` is told which), then the page
    (:func:`crsbench.report.build_report`) in ``out``; the path of ``index.html``.

    Raises
    ------
    ConfigError
        ``n_replicates`` is negative.
    """
    from crsbench.core.errors import ConfigError
    from crsbench.report import build_report
    from crsbench.stats.compute import stored_analyses
    from crsbench.store import load_runs

    if int(n_replicates) < 0:
        raise ConfigError(f"n_replicates must be >= 0. Got {n_replicates} instead.")
    runs = load_runs(store) if runs is None else runs
    analyses, _ = stored_analyses(store, runs, int(n_replicates), seed, anchors,
                                  interval=interval, n_jobs=n_jobs, say=say)  # fmt: skip
    return build_report(store, out, analyses, calibration_cell=calibration_cell)


@app.command("report", epilog=EXIT_CODES_HELP)
def report(
    store: Path = typer.Option(..., "--store", help="Directory holding results.duckdb."),
    out: Path = typer.Option(
        ..., "--out", help="Output directory for index.html, figures, tables."
    ),
    replicates: int = replicates_option(
        BOOTSTRAP_REPLICATES, "Bootstrap replicates (the protocol's; 2000 for a quick look)."
    ),
    seed: int = seed_option(0, "Seed of every resampling."),
    anchors: str | None = typer.Option(None, "--anchors", help="Anchors version or YAML path."),
    cell: str | None = typer.Option(
        None, "--calibration-cell", help="ENCODER/DATASET cell of the calibration section."
    ),
    interval: str = INTERVAL_OPTION,
    jobs: int | None = JOBS_OPTION,
    dry_run_ok: bool = DRY_RUN_OK_OPTION,
    quiet: bool = QUIET_OPTION,
    verbose: bool = VERBOSE_OPTION,
) -> None:
    """Write index.html (opens offline), every figure as PNG + SVG and every table as CSV."""
    from crsbench.core.errors import CrsbenchError

    verbosity(quiet, verbose)
    if replicates < 0:
        fail(f"--replicates must be >= 0. Got {replicates} instead.")
    chosen = None
    if cell is not None:
        parts = cell.split("/")
        if len(parts) != 2 or not all(parts):
            fail(f"--calibration-cell must be ENCODER/DATASET. Got {cell!r} instead.")
        chosen = (parts[0], parts[1])
    runs = load_store_runs(store, dry_run_ok)  # a dry run's store only with --dry-run-ok
    if quick_look_note(replicates):
        typer.echo(f"NOTE: {quick_look_note(replicates)}.", err=True)
    try:
        with claimed_folder(out) as folder:  # marked first: an interrupted report is crsbench's
            index = write_report(store, folder, runs=runs, n_replicates=replicates, seed=seed,
                                 anchors=anchors, calibration_cell=chosen, interval=interval,
                                 n_jobs=jobs, say=lambda line: typer.echo(line, err=True))  # fmt: skip
    except CrsbenchError as exc:
        fail(exc)
    except KeyboardInterrupt:
        fail(f"interrupted: run the same command again to write the report in {out} (what "
             "was written is crsbench's, so the rerun proceeds).", code=EXIT_INTERRUPTED)  # fmt: skip
    typer.echo(f"wrote {index}")
