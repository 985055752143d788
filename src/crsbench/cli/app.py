"""The root Typer application and its shared console."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.markup import escape

from crsbench.cli.output import EXIT_CODES_HELP, EXIT_USAGE

app = typer.Typer(
    name="crsbench",
    help="Choose a pretrained medical image encoder by its reliability profile (CRS-Bench).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    epilog=EXIT_CODES_HELP,
)
console = Console(stderr=False)
err_console = Console(stderr=True)


def fail(message: str, code: int = EXIT_USAGE) -> None:
    """Print ``message`` in red on stderr and exit with ``code``.

    The message is printed literally: user data in it (a label cell ``[red]7``, a folder
    named ``[/]``) is never read as rich markup.
    """
    err_console.print(f"[bold red]error:[/] {escape(message)}")
    raise typer.Exit(code)


@app.callback()
def _root() -> None:
    """crsbench: the CRS-Bench protocol, fully and fast."""


@app.command("version")
def version() -> None:
    """Print the package version."""
    from crsbench import __version__

    console.print(__version__)
