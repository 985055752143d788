"""``crsbench store repair`` and ``crsbench store compact``: keep a results store healthy."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from crsbench.cli.app import app, console, fail

store_app = typer.Typer(help="Maintain a results store.", no_args_is_help=True)
app.add_typer(store_app, name="store")


@store_app.command("repair")
def repair(
    store: Path = typer.Option(..., "--store", help="Directory holding results.duckdb."),
) -> None:
    """Move a damaged results.duckdb aside and rebuild it from the last export."""
    from crsbench.core.errors import CrsbenchError
    from crsbench.store.repair import repair_store

    try:
        report = repair_store(store)
    except CrsbenchError as exc:
        fail(exc)
        return
    for line in report.lines():
        console.print(escape(line))


@store_app.command("compact")
def compact(
    store: Path = typer.Option(..., "--store", help="Directory holding results.duckdb."),
    force: bool = typer.Option(
        False, "--force", help="Copy even when few blocks are free (the default skips it)."
    ),
) -> None:
    """Give the store's free blocks back to the disk (a fresh copy renamed over it).

    ``crsbench run`` does this when it closes the store and a quarter or more of the file is
    free; the copy needs as much free disk as the store's used part, and a disk that refuses
    it leaves the store as it was.
    """
    from crsbench.core.errors import CrsbenchError
    from crsbench.store.maintenance import compact_store

    try:
        result = compact_store(store, force=force)
    except CrsbenchError as exc:
        fail(exc)
        return
    console.print(escape(result.line()))
