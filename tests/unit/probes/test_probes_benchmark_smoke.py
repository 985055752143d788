"""Smoke run of benchmarks/probes.py --quick: output contract (last line speedup=..., figures)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "probes.py"


def test_benchmark_quick_prints_speedup_line_and_small_auroc_diff():
    out = (
        subprocess.run(
            [sys.executable, str(SCRIPT), "--quick", "--tol", "1e-6"],
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        .stdout.strip()
        .splitlines()
    )
    last = out[-1].split()
    assert last[0].startswith("speedup=") and float(last[0].split("=")[1]) > 0
    figures = dict(item.split("=") for item in last)
    assert float(figures["max_auroc_diff"]) <= 0.002
    assert {"engine_s", "sklearn_s", "multiclass_speedup", "multilabel_speedup"} <= figures.keys()
