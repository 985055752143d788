"""Smoke runs of the kernels' side-by-side benchmarks (``--quick``): each checks its two sides
equal on its own data (AUROC bit for bit, ECE to 1e-12, operating-point tables exactly) and
ends with its ratio line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"


@pytest.mark.parametrize(
    ("script", "keys"),
    [
        ("auroc_kernel.py", {"speedup", "ece_speedup"}),
        ("operating_points.py", {"speedup"}),
        ("rows_per_pass.py", {"speedup", "ece_speedup"}),
    ],  # fmt: skip
)
def test_quick_run_checks_both_sides_and_prints_its_ratio(script, keys):
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), "--quick"],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    last = done.stdout.strip().splitlines()[-1]
    figures = dict(item.split("=") for item in last.split("  (")[0].split())
    assert keys <= figures.keys() and all(float(figures[k]) > 0 for k in keys)
