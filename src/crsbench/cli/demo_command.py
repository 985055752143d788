"""``crsbench demo``: the README's main job on the embedded synthetic data."""

from __future__ import annotations

from pathlib import Path

import typer

from crsbench.cli.app import app, console, fail
from crsbench.cli.output import (
    EXIT_CODES_HELP,
    EXIT_INTERRUPTED,
    QUIET_OPTION,
    VERBOSE_OPTION,
    verbosity,
)


@app.command("demo", epilog=EXIT_CODES_HELP)
def demo(
    out: Path = typer.Option(Path("results/demo"), "--out", help="Output directory."),
    progress: bool = typer.Option(
        True, "--progress/--no-progress", help="Progress bars (drawn only on a terminal)."
    ),
    quiet: bool = QUIET_OPTION,
    verbose: bool = VERBOSE_OPTION,
) -> None:
    """Run the whole protocol on embedded synthetic data with offline encoders."""
    from crsbench.cli.demo_workflow import run_demo
    from crsbench.core.errors import CrsbenchError
    from crsbench.core.extras import require_extra

    level = verbosity(quiet, verbose)
    try:
        require_extra("encoders", "crsbench demo")  # before the synthetic data is written
        run_demo(out, console=console, progress=progress, verbosity=level,
                 from_process_start=True)  # fmt: skip
    except CrsbenchError as exc:
        fail(exc)
    except KeyboardInterrupt:
        fail("interrupted: run the demo again to resume.", code=EXIT_INTERRUPTED)
