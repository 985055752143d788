"""The demo's last stages (scores, analyses, report, leaderboard) and the whole demo (slow)."""

from __future__ import annotations

import time

import pytest
from rich.console import Console

from crsbench.cli.demo_workflow import leaderboard_and_report
from crsbench.testing import simulate_runs, write_store


def test_leaderboard_and_report_on_a_store(tmp_path, capsys):
    runs = simulate_runs(n_encoders=4, seeds=2, rng_seed=1)
    write_store(runs, tmp_path)
    console = Console(record=True, width=140)
    out = leaderboard_and_report(tmp_path, console)
    # not a terminal: the leaderboard is tab-separated with whole names, one encoder a line
    lines = capsys.readouterr().out.splitlines()
    header = next(line.split("\t") for line in lines if "\tencoder\t" in line)
    assert {"rank_auroc", "rank_crs", "CRS", "tier", "p_rank1"} <= set(header)
    assert sum(1 for line in lines if line.count("\t") == len(header) - 1) == 4 + 1
    assert out["report"].is_file() and out["report"].name == "index.html"
    assert all(p.is_file() for p in out["scores"])
    assert any((tmp_path / "analysis").glob("*.csv"))


@pytest.mark.slow
def test_whole_demo_runs_every_stage(tmp_path):
    """`crsbench demo` as a user runs it (a fresh process, cold feature cache): the printed
    leaderboard, every stage time in last_run.json, LoRA cells scored at every fraction and
    compared with the frozen regime. Its duration is measured by ``benchmarks/demo.py``."""
    import json
    import re
    import subprocess
    import sys

    import pandas as pd

    from crsbench.cli.demo_workflow import DEMO_BUDGET_S

    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "crsbench.cli", "demo", "--out",
                           str(tmp_path / "demo")], capture_output=True, text=True, timeout=900)  # fmt: skip
    wall = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "efficientnet_lite0_imagenet" in proc.stdout  # the printed leaderboard
    last = json.loads((tmp_path / "demo" / "last_run.json").read_text())
    assert {"extract", "probes_and_metrics", "lora_adaptation"} <= set(last["stage_seconds"])
    assert {"score_and_analyze", "report", "total"} <= set(last["demo_seconds"])
    regimes = pd.read_csv(tmp_path / "demo" / "analysis" / "regime_comparison.csv")
    crs = regimes[regimes["scope"] == "all"].iloc[0]
    assert crs["n"] == 2 and not pd.isna(crs["kendall_tau"]), crs.get("note")
    assert "nih_cxr14" in (tmp_path / "demo" / "report" / "index.html").read_text()
    printed = float(re.search(r"demo finished in ([0-9.]+) s", proc.stdout).group(1))
    assert printed == pytest.approx(last["demo_seconds"]["total"], abs=0.05)
    assert 0 < printed <= wall  # the printed time counts from the process start, inside its wall
    assert f"budget {DEMO_BUDGET_S:.0f} s" in proc.stdout  # how long is timed by benchmarks/demo.py
