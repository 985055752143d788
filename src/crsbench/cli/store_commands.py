"""``crsbench store repair``: recover from a damaged results store."""

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
