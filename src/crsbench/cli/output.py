"""How every command prints: tables for a terminal, a pipe or ``--json``; verbosity; exit codes.

A table goes to a terminal as a rich table, anywhere else (a pipe, a file, CI) as plain
tab-separated lines with whole names and no colour, so ``crsbench encoders list | grep
biomedclip`` finds its line; ``--json`` prints the same rows as a JSON list.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import typer
from rich.console import Console
from rich.markup import escape

from crsbench.core.verbosity import NORMAL, QUIET, VERBOSE

#: Exit codes of every command (docs/cli.md).
EXIT_OK = 0
EXIT_FAILED = 1  # a check found problems (datasets check, doctor), or an internal error
EXIT_USAGE = 2  # bad option, config, data or store; nothing (more) was written
EXIT_DISK = 3  # the disk refused a write: full, read-only or no permission (path named)
EXIT_INTERRUPTED = 130  # Ctrl-C or SIGTERM; committed work is kept

EXIT_CODES_HELP = (
    "Exit codes: 0 ok; 1 a check found problems (or an internal error, with a traceback); "
    "2 usage, config, data or store error (the message names the key or file); "
    "3 disk full, read-only or no permission (the message names the path; nothing "
    "half-written is kept); 130 interrupted (committed work is kept; rerun to resume)."
)


def exit_code_of(exc: BaseException) -> int:
    """The exit code of a crsbench error: :data:`EXIT_DISK` for a refused write, else
    :data:`EXIT_USAGE`."""
    from crsbench.core.errors import DiskError

    return EXIT_DISK if isinstance(exc, DiskError) else EXIT_USAGE


QUIET_OPTION = typer.Option(
    False, "--quiet", "-q", help="Print only errors and the final result lines."
)
VERBOSE_OPTION = typer.Option(
    False, "--verbose", "-v", help="Print more: every stage and cell, and log messages."
)


def verbosity(quiet: bool, verbose: bool) -> int:
    """``--quiet``/``--verbose`` → a level; also routes the package's log messages to stderr."""
    if quiet and verbose:
        raise typer.BadParameter("--quiet and --verbose cannot be used together.")
    level = QUIET if quiet else (VERBOSE if verbose else NORMAL)
    log = logging.getLogger("crsbench")
    if not any(getattr(h, "_crsbench_cli", False) for h in log.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        handler._crsbench_cli = True  # type: ignore[attr-defined]
        log.addHandler(handler)
    log.setLevel({QUIET: logging.ERROR, NORMAL: logging.WARNING, VERBOSE: logging.INFO}[level])
    return level


def _missing(value: Any) -> bool:
    """None, NaN or pandas' NA."""
    return (
        value is None
        or type(value).__name__ == "NAType"
        or (isinstance(value, float) and value != value)
    )


def _cell(value: Any, missing: str = "") -> str:
    if _missing(value):
        return missing
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _plain(value: Any) -> Any:
    """NaN → None (JSON has no NaN), numpy scalars → Python numbers, containers recursively."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, str | bytes):
        value = value.item()
    return None if _missing(value) else value


def print_json(data: Any) -> None:
    """Plain, valid JSON on stdout (never wrapped, never coloured; NaN written as null)."""
    typer.echo(json.dumps(_plain(data), indent=2, default=str))


def print_table(
    console: Console,
    rows: Sequence[Mapping[str, Any]],
    columns: Mapping[str, str],
    *,
    title: str = "",
    as_json: bool = False,
    right: Sequence[str] = (),
    whole: Sequence[str] = (),
) -> None:
    """Print ``rows`` (dicts) with ``columns`` (key → header) for a terminal, a pipe or JSON.

    Parameters
    ----------
    console : rich Console
        Its ``is_terminal`` chooses between the rich table and tab-separated lines.
    rows : sequence of mappings
    columns : mapping key → header
        Shown columns, in order; ``--json`` prints every key of every row.
    title : str
        Shown above the rich table only.
    as_json : bool
    right : keys to right-align in the rich table (numbers).
        Missing values (None, NaN, NA) print as an empty field in a pipe, ``—`` in the table and
        ``null`` in JSON.
    whole : keys never wrapped in the rich table (default: the first column).
    """
    if as_json:
        print_json([dict(r) for r in rows])
        return
    if not console.is_terminal:
        typer.echo("\t".join(columns))
        for r in rows:
            typer.echo("\t".join(_cell(r.get(k)).replace("\t", " ") for k in columns))
        return
    from rich.table import Table

    table = Table(title=escape(title) if title else None)
    keep = set(whole) or {next(iter(columns))}
    for key, header in columns.items():
        justify: Literal["right", "left"] = "right" if key in right else "left"
        table.add_column(escape(header), justify=justify, no_wrap=key in keep, overflow="fold")
    for r in rows:
        table.add_row(*(escape(_cell(r.get(k), "—")) for k in columns))
    console.print(table)


def print_stage_times(console: Console, stage_seconds: Mapping[str, float]) -> None:
    """One line per stage of a run: ``  name  seconds s`` (``crsbench run`` and ``demo``)."""
    for stage, secs in stage_seconds.items():
        console.print(f"  {stage:<22} {secs:8.1f} s", markup=False, highlight=False)


def print_stage_done(console: Console, name: str, seconds: float, detail: str = "") -> None:
    """A finished stage's line: ``✓ name (seconds s)`` and an optional ``: detail``."""
    tail = f": {escape(detail)}" if detail else ""
    console.print(f"[green]✓[/] {escape(name)} ({seconds:.1f} s){tail}", highlight=False)


#: ``--jobs`` of ``score``, ``analyze`` and ``report``.
JOBS_OPTION = typer.Option(
    None,
    "--jobs",
    min=1,
    help="Worker processes of the test-patient bootstrap (default: every available core "
    "when the bootstrap is large enough to repay starting them; 1: this process only). "
    "The numbers do not depend on it.",
)

#: The largest ``--replicates`` (more only spends memory and hours; 10,000 is the protocol's).
MAX_REPLICATES = 1_000_000


def quick_look_note(replicates: int) -> str:
    """The line said on screen when a bootstrap runs fewer replicates than the protocol's
    (:data:`crsbench.protocol.BOOTSTRAP_REPLICATES`); empty when it runs them all or none."""
    from crsbench.protocol import BOOTSTRAP_REPLICATES

    if not 0 < replicates < BOOTSTRAP_REPLICATES:
        return ""
    return (
        f"quick look: {replicates:,} replicates (the protocol's count is {BOOTSTRAP_REPLICATES:,})"
    )


def seed_option(default: int | None, help: str) -> Any:
    """A ``--seed`` option: an integer in [0, 2**31 - 1] (what the store's seed column holds);
    anything else is a usage error (exit 2) naming the option."""
    from crsbench.store.columns import INTEGER_MAX

    return typer.Option(default, "--seed", min=0, max=INTEGER_MAX, help=help)


def replicates_option(default: int, help: str) -> Any:
    """A ``--replicates`` option, at most :data:`MAX_REPLICATES` (a usage error, exit 2);
    each command checks its own minimum."""
    return typer.Option(default, "--replicates", max=MAX_REPLICATES, help=help)


#: ``--interval`` of ``score``, ``analyze`` and ``report``.
INTERVAL_OPTION = typer.Option(
    "test-patients",
    "--interval",
    help="Bootstrap of intervals and tiers: test-patients (test patients × seeds, paired; "
    "needs the store's per-sample predictions, else falls back to seed-only with a note) or "
    "seed-only (the paper's).",
)
