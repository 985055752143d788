"""``crsbench datasets ...``: list the dataset adapters and validate a dataset on disk."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from crsbench.cli.app import app, console, fail
from crsbench.cli.output import EXIT_CODES_HELP, EXIT_FAILED, print_table

datasets_app = typer.Typer(
    name="datasets",
    help="Dataset adapters: list them, validate a dataset on disk.",
    no_args_is_help=True,
)
app.add_typer(datasets_app, name="datasets")


@datasets_app.command("list")
def list_datasets(
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """List the registered dataset adapters with their task, modality and labels."""
    from crsbench.datasets import DATASETS

    rows = []
    for name in DATASETS.names():
        card = DATASETS.get(name).card
        task = card.task + (" (ordinal)" if card.ordinal else "")
        rows.append({"name": name, "task": task if card.label_names else "from CSV",
                     "modality": card.modality,
                     "labels": len(card.label_names) if card.label_names else "from CSV",
                     "licence": card.licence})  # fmt: skip
    columns = {k: k for k in ("name", "task", "modality", "labels", "licence")}
    print_table(console, rows, columns, title="datasets", as_json=as_json)


@datasets_app.command("check", epilog=EXIT_CODES_HELP)
def check_command(
    name: str = typer.Argument(..., help="Dataset name: isic2019, aptos2019, chexpert, ..."),
    root: Path = typer.Option(..., "--root", help="Directory holding the dataset."),
    decode: bool = typer.Option(
        False, "--decode/--no-decode", help="Fully decode every image (slow)."
    ),
    uncertainty: str | None = typer.Option(
        None, "--uncertainty", help="CheXpert/MIMIC policy for -1 labels: ignore|zeros|ones."
    ),
    option: list[str] = typer.Option(
        [], "--option", "-o", help="Extra adapter option KEY=VALUE (repeatable)."
    ),
    workers: int = typer.Option(8, "--workers", min=1, help="Threads probing image files."),
    min_side: int | None = typer.Option(None, "--min-side", help="Shortest image side accepted, px (the config's image_bounds.min_side; default 1)."),
    max_side: int | None = typer.Option(None, "--max-side", help="Longest image side accepted, px (image_bounds.max_side; default 65536)."),
    max_aspect: float | None = typer.Option(None, "--max-aspect", help="Largest aspect ratio accepted (image_bounds.max_aspect; default 20)."),
) -> None:  # fmt: skip
    """Validate dataset NAME under --root; exit 1 when anything would make results wrong."""
    from crsbench.core.errors import CrsbenchError
    from crsbench.datasets import check
    from crsbench.datasets.bounds import ImageBounds, refuse_retired_env

    options: dict[str, object] = {}
    for item in option:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            fail(f"--option must be KEY=VALUE. Got {item!r} instead.")
        options[key.strip()] = _parse_value(value.strip())
    if uncertainty is not None:
        options["uncertainty"] = uncertainty
    given = {"min_side": min_side, "max_side": max_side, "max_aspect": max_aspect}
    try:
        refuse_retired_env()
        bounds = ImageBounds.from_mapping({k: v for k, v in given.items() if v is not None},
                                          "image_bounds", as_options=True)  # fmt: skip
        report = check(name, root, decode=decode, workers=workers, image_bounds=bounds,
                       **options)  # fmt: skip
    except CrsbenchError as exc:
        fail(exc)
        return
    _print_report(report)
    if not report.ok:
        raise typer.Exit(EXIT_FAILED)


def _print_report(report: Any) -> None:
    """The check report: rich on a terminal; lines and a TSV label table in a pipe (through
    :func:`crsbench.cli.output.print_table`, as every other command)."""
    if console.is_terminal:
        console.print(report.to_rich())
        return
    typer.echo(report.head_lines()[0])
    if report.n_images:
        typer.echo(report.summary_line())
        columns = {k: k for k in ("label", "positives", "masked", "prevalence")}
        print_table(console, report.label_rows(), columns)
    for line in report.tail_lines():
        typer.echo(line)


def _parse_value(text: str) -> object:
    """``true``/``false``/``none``, comma lists and numbers; anything else stays a string."""
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    if "," in text:
        return [part.strip() for part in text.split(",") if part.strip()]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text
