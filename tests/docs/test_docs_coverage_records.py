"""The reported coverage run's records are in the repository and reproduce the figures
docs/scoring.md prints: `python benchmarks/coverage.py --from-csv benchmarks/results/coverage
--markdown` gives the page's table to the last digit, and the tuning worlds' records are kept
beside them."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

from tests.docs.docs_support import DOCS, REPO

SCRIPT = REPO / "benchmarks" / "coverage.py"
RECORDS = REPO / "benchmarks" / "results" / "coverage"


def _coverage_script():
    spec = importlib.util.spec_from_file_location("coverage_benchmark", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_reported_table_is_the_records_table():
    bench = _coverage_script()
    run = bench._load([RECORDS])
    table = bench._markdown(run)
    assert table in (DOCS / "scoring.md").read_text(encoding="utf-8")
    per_scenario = run.coverage().reset_index().groupby("scenario")["worlds"].min()
    assert (per_scenario >= 1000).all(), per_scenario.to_dict()


def test_the_script_prints_the_table_from_the_records():
    out = subprocess.run([sys.executable, str(SCRIPT), "--from-csv", str(RECORDS), "--markdown"],
                         capture_output=True, text=True, check=True, cwd=REPO)  # fmt: skip
    assert out.stdout.startswith("| target |")
    assert "leader gap" in out.stdout
