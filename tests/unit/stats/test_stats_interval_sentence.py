"""The phrase under a leaderboard whose CRS estimate lies outside its own basic interval."""

from __future__ import annotations

import io

import pandas as pd
from rich.console import Console

from crsbench.cli.leaderboard_view import print_leaderboard
from crsbench.report.leaderboard_files import estimate_outside_interval_sentence


def _board(crs, low, high):
    n = len(crs)
    return pd.DataFrame({"rank_crs": range(1, n + 1), "encoder": [f"enc{i}" for i in range(n)],
                         "CRS": crs, "crs_ci_low": low, "crs_ci_high": high})  # fmt: skip


def test_names_each_estimate_below_or_above_its_interval_and_nothing_else():
    board = _board([0.20, 0.30, 0.50, 0.40], [0.21, 0.25, 0.40, float("nan")],
                   [0.30, 0.35, 0.45, float("nan")])  # fmt: skip
    text = estimate_outside_interval_sentence(board)
    assert text == (
        "enc0: the plug-in 0.200 is outside its interval because the bootstrap finds it "
        "biased. enc2: the plug-in 0.500 is outside its interval because the bootstrap finds "
        "it biased."
    )
    board["crs_corrected"] = [0.25, 0.30, 0.42, float("nan")]
    assert estimate_outside_interval_sentence(board).startswith(
        "enc0: bias-corrected 0.250; the plug-in 0.200 is outside"
    )


def test_no_sentence_when_every_estimate_is_inside_or_columns_are_missing():
    assert estimate_outside_interval_sentence(_board([0.3], [0.2], [0.4])) == ""
    assert estimate_outside_interval_sentence(pd.DataFrame({"encoder": ["a"]})) == ""


def test_a_pipe_gets_the_table_on_stdout_and_the_sentence_on_stderr(capsys):
    from crsbench.cli.leaderboard_view import LEADERBOARD_COLUMNS

    board = _board([0.20], [0.21], [0.30])
    for col in LEADERBOARD_COLUMNS:
        board[col] = board.get(col, 1.0)
    print_leaderboard(Console(file=io.StringIO(), force_terminal=False), board, title="t")
    got = capsys.readouterr()
    assert got.out.startswith("rank_crs\tencoder") and "biased" not in got.out  # table only
    assert got.err.startswith("note: enc0: ") and "plug-in 0.200 is outside its" in got.err


def test_seed_only_percentile_rows_are_not_explained_as_a_bias_correction():
    board = _board([0.20, 0.20], [0.21, 0.21], [0.30, 0.30])
    board["interval"] = ["seed-only", "test patients × seeds"]
    text = estimate_outside_interval_sentence(board)
    assert "enc1" in text and "enc0" not in text
    board["interval"] = "seed-only"
    assert estimate_outside_interval_sentence(board) == ""
