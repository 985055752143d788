"""``crsbench demo``: the README's main job on the embedded synthetic data."""

from __future__ import annotations

from pathlib import Path

import typer

from crsbench.cli.app import app


@app.command("demo")
def demo(
    out: Path = typer.Option(Path("results/demo"), "--out", help="Output directory."),
) -> None:
    """Run the whole protocol on embedded synthetic data with offline encoders."""
    from crsbench.demo import run_demo

    run_demo(out)
