"""The root Typer application and its shared console."""

from __future__ import annotations

from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from crsbench.cli.output import EXIT_CODES_HELP, EXIT_USAGE, exit_code_of
from crsbench.core.errors import DiskError


class _Commands(TyperGroup):
    """The root command group: a disk that refuses a write (full, read-only, no permission)
    anywhere in a command ends it with the path named (exit 3), never a traceback."""

    def invoke(self, ctx: Any) -> Any:
        """Run the command; an OSError of a refused write becomes crsbench's DiskError.

        ``ctx`` is the Context of the click that Typer vendors (``typer._click``, private, so
        not named here); ``typer.Context`` is a subclass and would narrow the override."""
        from crsbench.core.diskio import uncaught_os_error

        try:
            return super().invoke(ctx)
        except OSError as exc:
            err = uncaught_os_error(exc)  # a permission error on an existing file: a read
            if err is None:
                raise
            fail(err)
        except DiskError as exc:  # a write site's error no command caught
            fail(exc)


app = typer.Typer(
    cls=_Commands,
    name="crsbench",
    help="Choose a pretrained medical image encoder by its reliability profile (CRS-Bench).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    epilog=EXIT_CODES_HELP,
)
console = Console(stderr=False)
err_console = Console(stderr=True)


def fail(message: str | BaseException, code: int | None = None) -> NoReturn:
    """Print ``message`` in red on stderr and exit with ``code``.

    ``message`` may be the crsbench error itself: its exit code is then
    :func:`~crsbench.cli.output.exit_code_of` it (3 for a disk that refused a write, else 2)
    unless ``code`` is given. The message is printed literally: user data in it (a label
    cell ``[red]7``, a folder named ``[/]``) is never read as rich markup.
    """
    if code is None:
        code = exit_code_of(message) if isinstance(message, BaseException) else EXIT_USAGE
    err_console.print(f"[bold red]error:[/] {escape(str(message))}")
    raise typer.Exit(code)


@app.callback()
def _root() -> None:
    """crsbench: the CRS-Bench protocol, fully and fast."""


@app.command("version")
def version() -> None:
    """Print the package version."""
    from crsbench import __version__

    console.print(__version__)
