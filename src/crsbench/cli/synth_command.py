"""``crsbench synth``: write synthetic data in the real datasets' on-disk layouts."""

from __future__ import annotations

from pathlib import Path

import typer

from crsbench.cli.app import app, console, fail
from crsbench.cli.output import (
    EXIT_CODES_HELP,
    QUIET_OPTION,
    VERBOSE_OPTION,
    seed_option,
    verbosity,
)
from crsbench.core.verbosity import NORMAL


@app.command("synth", epilog=EXIT_CODES_HELP)
def synth(
    out: Path = typer.Option(..., "--out", help="Folder that receives the dataset roots."),
    size: str = typer.Option("small", "--size", help="small (demo) or medium (benchmarks)."),
    seed: int = seed_option(0, "Generation seed (same seed, same bytes)."),
    overwrite: bool = typer.Option(
        False, "--overwrite/--no-overwrite", help="Replace folders written with other settings."
    ),
    quiet: bool = QUIET_OPTION,
    verbose: bool = VERBOSE_OPTION,
) -> None:
    """Write synthetic ISIC 2019, APTOS 2019, CheXpert, MIMIC-CXR-JPG, NIH ChestX-ray14,
    PadChest and VinDr-CXR (DICOM, needs pydicom) under OUT.

    A progress bar on a terminal; elsewhere one line per dataset when it is written.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from crsbench.core.errors import CrsbenchError
    from crsbench.datasets.synthetic import available_writers, n_images, resolve_size, write_all

    level = verbosity(quiet, verbose)
    bars = level >= NORMAL and console.is_terminal
    try:
        sz = resolve_size(size)
        writers = available_writers()
        totals = {name: n_images(name, sz) for name in writers}
        done = dict.fromkeys(writers, 0)
        with Progress("[progress.description]{task.description}", BarColumn(),
                      MofNCompleteColumn(), TimeElapsedColumn(), console=console,
                      disable=not bars) as bar:  # fmt: skip
            tasks = {name: bar.add_task(name, total=totals[name]) for name in writers}

            def advance(name: str, n: int) -> None:
                bar.advance(tasks[name], n)
                done[name] += n
                if not bars and level >= NORMAL and done[name] >= totals[name] > done[name] - n:
                    typer.echo(f"{name}: {totals[name]} images written")

            roots = write_all(out, size=sz, seed=seed, overwrite=overwrite, progress=advance)
            for name in writers:
                bar.update(tasks[name], completed=totals[name])
    except CrsbenchError as exc:
        fail(exc)
        return
    for name, root in roots.items():
        typer.echo(f"{name}: {root}")
