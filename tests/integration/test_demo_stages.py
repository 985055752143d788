"""The demo's last stages (scores, analyses, report, leaderboard) and the whole demo (slow)."""

from __future__ import annotations

import time

import pytest
from rich.console import Console

from crsbench.demo_leaderboard import leaderboard_and_report
from crsbench.testing import simulate_runs, write_store


def test_leaderboard_and_report_on_a_store(tmp_path, capsys):
    runs = simulate_runs(n_encoders=4, seeds=2, rng_seed=1)
    write_store(runs, tmp_path)
    console = Console(record=True, width=140)
    out = leaderboard_and_report(tmp_path, console, {}, time.perf_counter())
    # not a terminal: the leaderboard is tab-separated with whole names, one encoder a line
    lines = capsys.readouterr().out.splitlines()
    header = next(line.split("\t") for line in lines if line.startswith("encoder\t"))
    assert {"rank_auroc", "rank_crs", "CRS", "tier"} <= set(header)
    assert sum(1 for line in lines if line.count("\t") == len(header) - 1) == 4 + 1
    assert out["report"].is_file() and out["report"].name == "index.html"
    assert all(p.is_file() for p in out["scores"])
    assert any((tmp_path / "analysis").glob("*.csv"))


@pytest.mark.slow
def test_whole_demo_under_five_minutes(tmp_path):
    from crsbench.demo import run_demo

    t0 = time.perf_counter()
    result = run_demo(tmp_path, console=Console(record=True, width=140), progress=False)
    assert time.perf_counter() - t0 < 300
    assert result["store"].is_file() and result["report"].is_file()
