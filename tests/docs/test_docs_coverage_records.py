"""The reported coverage run's records are in the repository and reproduce the figures
docs/scoring.md prints: `python benchmarks/interval_coverage.py --from-csv benchmarks/results/coverage
--markdown` gives the page's table to the last digit, and the tuning worlds' records are kept
beside them."""

from __future__ import annotations

import subprocess
import sys

from .docs_support import DOCS, REPO, load_script

SCRIPT = REPO / "benchmarks" / "interval_coverage.py"
RECORDS = REPO / "benchmarks" / "results" / "coverage"
TUNING = REPO / "benchmarks" / "results" / "coverage_tuning"
SINGLE_ECE = ("binary", "isic 8-class", "aptos 5-class ordinal", "near-tie aptos", "missing cell")


def _coverage_script():
    return load_script(SCRIPT, "coverage_benchmark")


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


def test_the_adopted_reaches_hold_the_band_on_their_tuning_worlds():
    """The constants the intervals use are the candidates the tuning records support: the
    leader gap at DIFFERENCE_REACH and one ECE at SINGLE_ECE_TOP_REACH inside 0.90-0.98 in
    every scenario they apply to, on 200 (140 for the ECE reaches) tuning worlds each."""
    from crsbench.stats.intervals import DIFFERENCE_REACH, SINGLE_ECE_TOP_REACH

    cov = _coverage_script()._load([TUNING]).coverage().reset_index()
    gap = cov[(cov["method"] == f"candidate: gap reach {DIFFERENCE_REACH:g}")
              & (cov["target"] == "leader gap")]  # fmt: skip
    assert len(gap) == 7 and (gap["worlds"] >= 200).all()
    assert gap["coverage"].between(0.90, 0.98).all(), gap.to_string()
    ece = cov[(cov["method"] == f"candidate: ECE union + {SINGLE_ECE_TOP_REACH:g} percentile top")
              & (cov["target"] == "ece") & cov["scenario"].isin(SINGLE_ECE)]  # fmt: skip
    assert len(ece) == len(SINGLE_ECE) and (ece["worlds"] >= 140).all()
    assert ece["coverage"].between(0.90, 0.98).all(), ece.to_string()
