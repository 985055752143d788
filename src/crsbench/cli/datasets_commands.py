"""``crsbench datasets ...``: list the dataset adapters and validate a dataset on disk."""

from __future__ import annotations

from pathlib import Path

import typer

from crsbench.cli.app import app, console, fail

datasets_app = typer.Typer(
    name="datasets",
    help="Dataset adapters: list them, validate a dataset on disk.",
    no_args_is_help=True,
)
app.add_typer(datasets_app, name="datasets")


@datasets_app.command("list")
def list_datasets() -> None:
    """List the registered dataset adapters with their task, modality and labels."""
    from rich.table import Table

    from crsbench.datasets import DATASETS

    table = Table(title="datasets")
    for column in ("name", "task", "modality", "labels", "licence"):
        table.add_column(column)
    for name in DATASETS.names():
        card = DATASETS.get(name).card
        task = card.task + (" (ordinal)" if card.ordinal else "")
        task = task if card.label_names else "from CSV"
        labels = str(len(card.label_names)) if card.label_names else "from CSV"
        table.add_row(name, task, card.modality, labels, card.licence)
    console.print(table)


@datasets_app.command("check")
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
) -> None:
    """Validate dataset NAME under --root; exit 1 when anything would make results wrong."""
    from crsbench.core.errors import CrsbenchError
    from crsbench.datasets import check

    options: dict[str, object] = {}
    for item in option:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            fail(f"--option must be KEY=VALUE. Got {item!r} instead.")
        options[key.strip()] = _parse_value(value.strip())
    if uncertainty is not None:
        options["uncertainty"] = uncertainty
    try:
        report = check(name, root, decode=decode, workers=workers, **options)
    except CrsbenchError as exc:
        fail(str(exc))
        return
    console.print(report.to_rich())
    if not report.ok:
        raise typer.Exit(1)


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
