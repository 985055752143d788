"""The leaderboard as every command prints it (``crsbench score`` and ``crsbench demo``)."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from crsbench.cli.output import print_table
from crsbench.protocol import interval_label
from crsbench.report.leaderboard_files import estimate_outside_interval_sentence

#: Board column → header of the printed leaderboard, in order (``ci`` is built from the
#: interval columns).
LEADERBOARD_COLUMNS = {
    "rank_crs": "#",
    "encoder": "encoder",
    "auroc": "D auroc",
    "ece": "C ece",
    "retention": "L ret",
    "robustness_drop": "R drop",
    "robustness_drop_extra": "extras drop",
    "P": "P",
    "I": "I",
    "W": "W",
    "CRS": "CRS",
    "ci": "CRS interval",
    "crs_corrected": "CRS bias-corrected",
    "rank_auroc": "#auroc",
    "tier": "tier",
    "p_rank1": "P(1)",
}


def _ci(low: float, high: float) -> str:
    return "" if low != low or high != high else f"[{low:.3f}, {high:.3f}]"


def interval_header(board: Any) -> str:
    """The CRS interval column's header: ``95% CI`` (test patients × seeds, shown to cover on
    planted truth), ``seed-only range`` (the seed-only bootstrap, which ignores the test set's
    sampling) or both when rows mix them."""
    methods = sorted({m for m in board.get("interval", []) if isinstance(m, str) and m})
    labels = sorted({interval_label(m) for m in methods})
    return " / ".join(labels) if labels else "CRS interval"


def leaderboard_rows(board: Any, *, with_missing: bool = False) -> list[dict[str, Any]]:
    """The printed columns of ``board`` (a :func:`crsbench.stats.leaderboard.build_leaderboard` frame, in
    its order: best CRS first); ``with_missing`` adds each encoder's NaN note (``None`` when
    complete)."""
    ci = [_ci(lo, hi) for lo, hi in zip(board["crs_ci_low"], board["crs_ci_high"], strict=True)]
    if "crs_corrected" not in board:
        board = board.assign(crs_corrected=float("nan"))
    rows = board.assign(ci=ci)[list(LEADERBOARD_COLUMNS)].to_dict("records")
    if with_missing:
        for row, note in zip(rows, board["missing"], strict=True):
            row["missing"] = note or None
    return rows


def print_leaderboard(console: Console, board: Any, *, title: str, as_json: bool = False) -> None:
    """Print ``board``: a rich table on a terminal, tab-separated lines (whole names) in a pipe,
    a JSON list with ``as_json`` (with each encoder's ``missing`` note)."""
    right = [c for c in LEADERBOARD_COLUMNS if c != "encoder"]
    rows = leaderboard_rows(board, with_missing=as_json)
    headers = {**LEADERBOARD_COLUMNS, "ci": interval_header(board)}
    print_table(console, rows, headers, title=title, as_json=as_json, right=right,
                whole=("encoder",))  # fmt: skip
    note = "" if as_json else estimate_outside_interval_sentence(board)
    if note:  # under the table on a terminal; on stderr in a pipe, so stdout stays the table
        where = console if console.is_terminal else Console(stderr=True, soft_wrap=True)
        where.print(f"note: {note}", highlight=False, markup=False)
