"""``crsbench encoders ...``: inspect the encoder registry."""

from __future__ import annotations

import typer

from crsbench.cli.app import app, console, fail
from crsbench.cli.output import print_json, print_table
from crsbench.protocol import FAMILY_GROUPS

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
    from crsbench.encoders import ENCODERS, get_card, weights_available

    groups = FAMILY_GROUPS
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
    columns = {"name": "name", "family": "family", "group": "group", "domain": "domain",
               "source": "source", "embed_dim": "embed dim", "weights_available": "weights here",
               "gated": "gated"}  # fmt: skip
    print_table(console, rows, columns, title="crsbench encoders", as_json=as_json,
                right=("embed_dim",))  # fmt: skip


@encoders_app.command("show")
def show_encoder(name: str = typer.Argument(..., help="Registered encoder name.")) -> None:
    """Print one encoder's full card as JSON."""
    from crsbench.core.errors import CrsbenchError
    from crsbench.encoders import describe

    try:
        print_json(describe(name))
    except CrsbenchError as exc:
        fail(exc)
