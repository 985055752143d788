"""``crsbench score`` (leaderboard) and ``crsbench analyze`` (every analysis of section 6)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from crsbench.cli.app import app, console, fail


def _load(store: Path):
    from crsbench.core.errors import CrsbenchError
    from crsbench.scoring import load_runs

    try:
        return load_runs(store)
    except CrsbenchError as exc:
        fail(str(exc))


@app.command("score")
def score(
    store: Path = typer.Option(..., "--store", help="Directory holding results.duckdb."),
    out: Path | None = typer.Option(None, "--out", help="Output directory (default STORE/scores)."),
    anchors: str | None = typer.Option(
        None, "--anchors", help="Anchors version (v1) or YAML path; default: current version."
    ),
    rule: str = typer.Option("fixed", "--rule", help="fixed (published) or cohort."),
    replicates: int = typer.Option(10_000, "--replicates", help="Bootstrap replicates for tiers."),
    seed: int = typer.Option(0, "--seed", help="Bootstrap seed."),
) -> None:
    """Leaderboard: four axes, CRS and components, AUROC, both ranks and the bootstrap tier."""
    from rich.console import Console
    from rich.table import Table

    from crsbench.core.errors import CrsbenchError
    from crsbench.scoring import build_leaderboard, write_tables

    if replicates < 0:
        fail(f"--replicates must be >= 0. Got {replicates} instead.")
    runs = _load(store)
    try:
        board = build_leaderboard(runs, anchors, rule=rule, n_replicates=replicates, seed=seed)
    except CrsbenchError as exc:
        fail(str(exc))
    if board.empty:
        fail(f"store {store} has no complete main-protocol cells to score.")
    version = board["anchors_version"].iloc[0]
    table = Table(title=f"CRS-Bench leaderboard (rule={rule}, anchors {version})")
    shown = {"rank_crs": "#", "encoder": "encoder", "auroc": "D auroc", "ece": "C ece",
             "retention": "L ret", "robustness_drop": "R drop",
             "robustness_drop_extra": "extras drop", "P": "P", "I": "I", "W": "W",
             "CRS": "CRS", "rank_auroc": "#auroc", "tier": "tier", "p_rank1": "P(1)"}  # fmt: skip
    for col, header in shown.items():
        table.add_column(header, justify="left" if col == "encoder" else "right", no_wrap=True)
    for row in board[list(shown)].itertuples(index=False):
        table.add_row(*(_shown(v) for v in row))
    wide = console if console.is_terminal else Console(width=160)
    wide.print(table)
    for enc, note in zip(board["encoder"], board["missing"], strict=True):
        if note:
            console.print(f"[yellow]{enc}[/]: CRS or an axis is NaN: {note}", markup=True)
    paths = write_tables(board, out or store / "scores")
    console.print("wrote " + ", ".join(escape(str(p)) for p in paths))


def _shown(value: object) -> str:
    """A leaderboard value as printed: floats to 3 decimals, missing values as '—'."""
    import pandas as pd

    if value is pd.NA or (isinstance(value, float) and value != value):
        return "—"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


@app.command("analyze")
def analyze(
    store: Path = typer.Option(..., "--store", help="Directory holding results.duckdb."),
    out: Path | None = typer.Option(
        None, "--out", help="Output directory (default STORE/analysis)."
    ),
    replicates: int = typer.Option(10_000, "--replicates", help="Bootstrap replicates."),
    seed: int = typer.Option(0, "--seed", help="Seed of every resampling."),
    anchors: str | None = typer.Option(None, "--anchors", help="Anchors version or YAML path."),
) -> None:
    """Run every analysis of docs/protocol.md section 10 the store has data for (CSV + summary.json)."""
    from crsbench.core.errors import CrsbenchError
    from crsbench.stats import run_analyses

    if replicates < 1:
        fail(f"--replicates must be >= 1. Got {replicates} instead.")
    runs = _load(store)
    target = out or store / "analysis"
    try:
        summary = run_analyses(runs, target, n_replicates=replicates, seed=seed, anchors=anchors)
    except CrsbenchError as exc:
        fail(str(exc))
    for name in summary["analyses"]:
        console.print(f"[green]done[/] {name}")
    for probe in summary["analyses"].get("control_probe_agreement", {}).values():
        console.print(probe["sentence"])
    for name, why in summary["skipped"].items():
        console.print(f"[yellow]skipped[/] {name}: {escape(str(why))}")
    console.print(
        f"wrote {escape(str(target))}/summary.json (anchors {summary['anchors_version']})"
    )
