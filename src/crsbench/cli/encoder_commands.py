"""``crsbench encoders ...``: inspect the encoder registry."""

from __future__ import annotations

import json

import typer

from crsbench.cli.app import app, console, fail

encoders_app = typer.Typer(help="Inspect the encoder registry.", no_args_is_help=True)
app.add_typer(encoders_app, name="encoders")


@encoders_app.command("list")
def list_encoders(
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    group: str = typer.Option(
        "", "--group", help="Only this family group (general, medical, specialist, baseline)."
    ),
) -> None:
    """Every registered encoder: group, domain, source, embedding size, weights on this machine."""
    from rich.table import Table

    from crsbench.encoders import ENCODERS, get_card, weights_available

    groups = ("general", "medical", "specialist", "baseline")
    if group and group not in groups:
        fail(f"--group must be one of {', '.join(groups)}. Got {group!r} instead.")
    names = sorted(ENCODERS.names(), key=lambda n: (groups.index(get_card(n).family_group), n))
    rows = []
    for name in names:
        card = get_card(name)
        if group and card.family_group != group:
            continue
        rows.append(
            {
                "name": name,
                "family": card.family,
                "group": card.family_group,
                "domain": card.domain or "-",
                "source": card.source,
                "embed_dim": card.embed_dim,
                "gated": card.gated,
                "weights_available": weights_available(name),
            }
        )
    if as_json:
        console.print_json(json.dumps(rows))
        return
    table = Table(title="crsbench encoders")
    for col in ("name", "family", "group", "domain", "source", "embed dim", "weights here"):
        table.add_column(col, overflow="fold")
    for r in rows:
        avail = "[green]yes[/]" if r["weights_available"] else "[red]no[/]"
        table.add_row(
            r["name"],
            r["family"],
            r["group"],
            r["domain"],
            r["source"],
            str(r["embed_dim"]),
            avail + (" (gated)" if r["gated"] else ""),
        )
    console.print(table)


@encoders_app.command("show")
def show_encoder(name: str = typer.Argument(..., help="Registered encoder name.")) -> None:
    """Print one encoder's full card as JSON."""
    from crsbench.core.errors import CrsbenchError
    from crsbench.encoders import describe

    try:
        console.print_json(json.dumps(describe(name)))
    except CrsbenchError as exc:
        fail(str(exc))
