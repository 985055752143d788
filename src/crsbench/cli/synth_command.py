"""``crsbench synth``: write synthetic data in the real datasets' on-disk layouts."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from crsbench.cli.app import app, console, fail


@app.command("synth")
def synth(
    out: Path = typer.Option(..., "--out", help="Folder that receives the four dataset roots."),
    size: str = typer.Option("small", "--size", help="small (demo) or medium (benchmarks)."),
    seed: int = typer.Option(0, "--seed", help="Generation seed (same seed, same bytes)."),
    overwrite: bool = typer.Option(
        False, "--overwrite/--no-overwrite", help="Replace folders written with other settings."
    ),
) -> None:
    """Write synthetic ISIC 2019, APTOS 2019, CheXpert and MIMIC-CXR-JPG under OUT."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from crsbench.core.errors import CrsbenchError
    from crsbench.datasets.synthetic import WRITERS, n_images, resolve_size, write_all

    try:
        sz = resolve_size(size)
        with Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        ) as bar:
            tasks = {name: bar.add_task(name, total=n_images(name, sz)) for name in WRITERS}
            roots = write_all(
                out,
                size=sz,
                seed=seed,
                overwrite=overwrite,
                progress=lambda name, n: bar.advance(tasks[name], n),
            )
            for name in WRITERS:
                bar.update(tasks[name], completed=n_images(name, sz))
    except CrsbenchError as exc:
        fail(str(exc))
        return
    for name, root in roots.items():
        console.print(f"{name}: {escape(str(root))}")
