"""The ``crsbench`` command line. Thin: parse, build config, call one function.

Each command group lives in its own module and registers on :data:`crsbench.cli.app.app`;
importing a module here is what adds its commands. Command bodies import heavy packages
lazily so ``crsbench --help`` stays fast.
"""

from __future__ import annotations

import os
import sys

# Help read from a pipe or a log: click's plain layout, which wraps words instead of cutting
# them off in a box (typer reads this when it is first imported).
if sys.stdout is None or not sys.stdout.isatty():
    os.environ.setdefault("TYPER_USE_RICH", "0")

from crsbench.cli import (  # noqa: F401  (importing registers the commands)
    analysis_commands,
    cohort_commands,
    consortium_commands,
    datasets_commands,
    demo_command,
    encoder_commands,
    estimate_command,
    report_command,
    run_commands,
    store_commands,
    synth_command,
)
from crsbench.cli.app import app


def main() -> None:
    """Console-script entry point."""
    from crsbench.core.workers import prefer_sleeping_openmp_threads

    prefer_sleeping_openmp_threads()  # before a command imports torch
    app()


__all__ = ["app", "main"]
