"""``crsbench score`` (leaderboard) and ``crsbench analyze`` (every analysis of section 6)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from crsbench.cli.app import app, console, fail
from crsbench.cli.leaderboard_view import print_leaderboard
from crsbench.cli.output import (
    EXIT_CODES_HELP,
    INTERVAL_OPTION,
    JOBS_OPTION,
    QUIET_OPTION,
    VERBOSE_OPTION,
    quick_look_note,
    replicates_option,
    seed_option,
    verbosity,
)
from crsbench.core.verbosity import NORMAL
from crsbench.protocol import BOOTSTRAP_REPLICATES
from crsbench.store.outputs import claimed_folder

DRY_RUN_OK_OPTION = typer.Option(
    False, "--dry-run-ok", help="Accept a dry run's store (random weights: not results)."
)


def interval_lines(attrs: dict, replicates: int) -> list[str]:
    """What the intervals are: the method, a loud note on a fallback, test patients per
    dataset, which encoders the test set cannot tell apart, the incomplete encoders (no tier
    or rank probabilities, with the reason) and a store without a recorded plan."""
    out = [f"NOTE: {line}." for line in attrs.get("plan_notes") or []]
    if attrs.get("interval_note"):
        out.append(f"NOTE: {attrs['interval_note']}.")
    patients = attrs.get("n_patients") or {}
    if patients:
        counts = ", ".join(f"{d} {n:,}" for d, n in sorted(patients.items()))
        out.append(f"intervals: test patients × seeds bootstrap (95% CI, basic), "
                   f"{replicates:,} replicates; test patients: {counts}")  # fmt: skip
    elif replicates > 0:
        out.append(f"intervals: seed-only bootstrap, {replicates:,} replicates (seed-only "
                   "ranges, not 95% CIs: the test set is not resampled)")  # fmt: skip
    incomplete = [f"NOTE: {line}" for line in attrs.get("incomplete") or []]
    return out + list(attrs.get("indistinguishable") or []) + incomplete


def load_store_runs(store: Path, dry_run_ok: bool = False):
    """The store's runs table; a dry run's store (random-weight records) is refused unless
    ``dry_run_ok`` (see docs/runner.md, dry run)."""
    from crsbench.core.errors import CrsbenchError
    from crsbench.core.random_weights import refuse_dry_run
    from crsbench.store import load_runs

    try:
        runs = load_runs(store)
        if not dry_run_ok:
            refuse_dry_run(runs["encoder"], runs["encoder_revision"], str(store))
    except CrsbenchError as exc:
        fail(exc)
    return runs


@app.command("score", epilog=EXIT_CODES_HELP)
def score(
    store: Path = typer.Option(..., "--store", help="Directory holding results.duckdb."),
    out: Path | None = typer.Option(None, "--out", help="Output directory (default STORE/scores)."),
    anchors: str | None = typer.Option(
        None,
        "--anchors",
        help="Anchors version (v2, v1) or YAML path; default: the one the store's runs recorded.",
    ),
    rule: str = typer.Option("fixed", "--rule", help="fixed (published) or cohort."),
    replicates: int = replicates_option(2_000, "Bootstrap replicates for tiers."),
    seed: int = seed_option(0, "Bootstrap seed."),
    interval: str = INTERVAL_OPTION,
    jobs: int | None = JOBS_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print the leaderboard as JSON."),
    dry_run_ok: bool = DRY_RUN_OK_OPTION,
    quiet: bool = QUIET_OPTION,
    verbose: bool = VERBOSE_OPTION,
) -> None:
    """Leaderboard: four axes, CRS and components, AUROC, both ranks and the bootstrap tier."""
    from crsbench.core.errors import CrsbenchError
    from crsbench.report.leaderboard_files import write_tables
    from crsbench.stats.compute import stored_leaderboard

    level = verbosity(quiet, verbose)
    if replicates < 0:
        fail(f"--replicates must be >= 0. Got {replicates} instead.")
    runs = load_store_runs(store, dry_run_ok)
    try:
        board = stored_leaderboard(store, runs, anchors, rule=rule, n_replicates=replicates,
                                   seed=seed, interval=interval, n_jobs=jobs,
                                   say=lambda line: typer.echo(line, err=True))  # fmt: skip
    except CrsbenchError as exc:
        fail(exc)
    if board.empty:
        fail(f"store {store} has no complete main-protocol cells to score.")
    version = board["anchors_version"].iloc[0]
    try:
        with claimed_folder(out or store / "scores") as folder:
            paths = write_tables(board, folder)
    except CrsbenchError as exc:
        fail(exc)
    title = f"CRS-Bench leaderboard (rule={rule}, anchors {version})"
    print_leaderboard(console, board, title=title, as_json=as_json)
    if as_json:
        return
    for enc, note in zip(board["encoder"], board["missing"], strict=True):
        if note:  # on stderr: a pipe keeps the table clean
            typer.echo(f"{enc}: CRS or an axis is NaN: {note}", err=True)
    for line in interval_lines(board.attrs, replicates):
        typer.echo(line, err=True)
    if quick_look_note(replicates):
        typer.echo(f"NOTE: {quick_look_note(replicates)}.", err=True)
    if level >= NORMAL:
        typer.echo("wrote " + ", ".join(str(p) for p in paths))


@app.command("analyze", epilog=EXIT_CODES_HELP)
def analyze(
    store: Path = typer.Option(..., "--store", help="Directory holding results.duckdb."),
    out: Path | None = typer.Option(
        None, "--out", help="Output directory (default STORE/analysis)."
    ),
    replicates: int = replicates_option(
        BOOTSTRAP_REPLICATES, "Bootstrap replicates (the protocol's; 2000 for a quick look)."
    ),
    seed: int = seed_option(0, "Seed of every resampling."),
    anchors: str | None = typer.Option(None, "--anchors", help="Anchors version or YAML path."),
    interval: str = INTERVAL_OPTION,
    jobs: int | None = JOBS_OPTION,
    dry_run_ok: bool = DRY_RUN_OK_OPTION,
    quiet: bool = QUIET_OPTION,
    verbose: bool = VERBOSE_OPTION,
) -> None:
    """Run every analysis of docs/protocol.md section 10 the store has data for (CSV + summary.json)."""
    from crsbench.core.errors import CrsbenchError
    from crsbench.stats.analyze import write_analyses
    from crsbench.stats.compute import stored_analyses

    level = verbosity(quiet, verbose)
    if replicates < 1:
        fail(f"--replicates must be >= 1. Got {replicates} instead.")
    runs = load_store_runs(store, dry_run_ok)
    try:
        with claimed_folder(out or store / "analysis") as target:
            computed, _ = stored_analyses(store, runs, replicates, seed, anchors,
                                          interval=interval, n_jobs=jobs,
                                          say=lambda line: typer.echo(line, err=True))  # fmt: skip
            write_analyses(computed, target)
    except CrsbenchError as exc:
        fail(exc)
    summary = computed.summary
    if level >= NORMAL:
        for name in summary["analyses"]:
            console.print(f"[green]done[/] {name}")
        for probe in summary["analyses"].get("control_probe_agreement", {}).values():
            console.print(escape(probe["sentence"]))
        for name, why in summary["skipped"].items():
            console.print(f"[yellow]skipped[/] {name}: {escape(str(why))}")
    for note in summary.get("notes") or []:
        typer.echo(f"NOTE: {note}.", err=True)
    boot = summary["analyses"].get("bootstrap") or {}
    if boot.get("note"):
        typer.echo(f"NOTE: {boot['note']}.", err=True)
    if quick_look_note(replicates):
        typer.echo(f"NOTE: {quick_look_note(replicates)}.", err=True)
    typer.echo(f"wrote {target}/summary.json (anchors {summary['anchors_version']})")
