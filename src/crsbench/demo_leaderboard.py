"""The demo's last stages: score the store, run the analyses, report, print a leaderboard."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pandas as pd
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from crsbench.store.files import STORE_FILE

DEMO_REPLICATES = 2_000


def leaderboard_table(board: Any) -> Table:
    """AUROC rank and CRS rank side by side, with the four axes and the bootstrap tier."""
    table = Table(title="crsbench demo — AUROC rank vs CRS rank (fixed anchors)")
    headers = (
        "encoder",
        "AUROC#",
        "CRS#",
        "AUROC",
        "ECE",
        "retain",
        "R drop",
        "extras",
        "CRS",
        "tier",
        "P(1st)",
    )
    for col in headers:
        if col == "encoder":
            table.add_column(col, no_wrap=True)
        else:
            table.add_column(col, justify="right", no_wrap=True)
    for _, r in board.sort_values("rank_crs", na_position="last").iterrows():
        ranked = not pd.isna(r["rank_crs"]) and not pd.isna(r["rank_auroc"])
        moved = int(r["rank_auroc"]) - int(r["rank_crs"]) if ranked else 0
        arrow = (
            "" if moved == 0 else (f" [green]▲{moved}[/]" if moved > 0 else f" [red]▼{-moved}[/]")
        )
        table.add_row(
            str(r["encoder"]),
            _num(r["rank_auroc"], "d"),
            _num(r["rank_crs"], "d") + arrow,
            _num(r["auroc"]),
            _num(r["ece"]),
            _num(r["retention"]),
            _num(r["robustness_drop"]),
            _num(r.get("robustness_drop_extra", float("nan"))),
            _num(r["CRS"]),
            "" if pd.isna(r["tier"]) else str(int(r["tier"])),
            "" if pd.isna(r["p_rank1"]) else f"{r['p_rank1']:.2f}",
        )
    return table


def _num(value: Any, spec: str = ".3f") -> str:
    """``value`` formatted with ``spec``; a missing value (NaN, <NA>) as '—'."""
    if pd.isna(value):
        return "—"
    return format(int(value) if spec == "d" else float(value), spec)


def leaderboard_and_report(
    out: Path, console: Console, times: dict[str, float], t0: float, loud: Console | None = None
) -> dict[str, Any]:
    """Score ``out/results.duckdb``, write tables, analyses and the report; print the board.

    Stage lines go to ``loud`` (default ``console``; a quiet console under ``--quiet``), the
    leaderboard and the result paths to ``console``.
    """
    loud = loud or console
    from crsbench.report.leaderboard import build_leaderboard, write_tables
    from crsbench.stats import run_analyses
    from crsbench.store import load_runs

    result: dict[str, Any] = {}
    runs = load_runs(out)
    board = build_leaderboard(runs, n_replicates=DEMO_REPLICATES, seed=0, store=out)
    result["scores"] = write_tables(board, out / "scores")
    run_analyses(runs, out / "analysis", n_replicates=DEMO_REPLICATES, seed=0, store=out)
    now = time.perf_counter()
    times["score_and_analyze"] = now - t0
    loud.print(f"[green]✓[/] scores and analyses ({now - t0:.1f} s)")
    t0 = now
    from crsbench.report import build_report

    result["report"] = build_report(out, out / "report", n_replicates=DEMO_REPLICATES)
    now = time.perf_counter()
    times["report"] = now - t0
    loud.print(f"[green]✓[/] report ({now - t0:.1f} s): {escape(str(result['report']))}")
    if console.is_terminal:
        wide = console if console.width >= 110 else Console(width=110)
        wide.print(leaderboard_table(board))
    else:  # a pipe or a log: tab-separated, whole names, no redraws
        from crsbench.cli.output import print_table

        columns = {k: k for k in ("encoder", "rank_auroc", "rank_crs", "auroc", "ece",
                                  "retention", "robustness_drop", "CRS", "tier", "p_rank1")}  # fmt: skip
        print_table(console, board.sort_values("rank_crs").to_dict("records"), columns)
    console.print(
        f"results: {out / STORE_FILE}  tables: {out / 'scores'}  analyses: {out / 'analysis'}",
        markup=False,
        highlight=False,
    )
    return result
