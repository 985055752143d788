"""Smoke run of benchmarks/paper_scale.py at a tiny scale: the table and the planned records."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "paper_scale.py"


def _script():
    spec = importlib.util.spec_from_file_location("paper_scale_benchmark", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tiny_paper_scale_prints_the_table_and_stores_the_planned_records(tmp_path, capsys):
    from crsbench.store import ResultsStore

    bench = _script()
    rows = tmp_path / "rows.json"
    argv = [
        "--scale",
        "0.002",
        "--encoders",
        "1",
        "--steps",
        "score",
        "--replicates",
        "50",
        "--other-replicates",
        "50",
        "--out",
        str(tmp_path),
        "--keep",
        "--json",
        str(rows),
    ]
    assert bench.main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if line.startswith("| scale"))
    assert [c.strip() for c in header.strip("| ").split("|")] == list(bench.COLUMNS)
    (row,) = json.loads(rows.read_text())
    # the planner's records of one encoder's 3 cells (380 + 380 + 520), every one stored
    assert row["records"] == row["planned"] == 1_280
    assert row["predictions"] == 5 * (24 + 24 + 28) and row["score_s"] > 0
    with ResultsStore(tmp_path / "scale-0.002", None, mode="r") as store:
        assert store.count() == row["planned"]
    assert any(line.startswith("scale 1/500: goal") for line in lines)
    _check_prediction_memory(tmp_path / "scale-0.002", capsys)


def _memory_script():
    spec = importlib.util.spec_from_file_location(
        "prediction_memory_benchmark", SCRIPT.parent / "prediction_memory.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _check_prediction_memory(store: Path, capsys) -> None:
    """benchmarks/prediction_memory.py on the store just written: both loads and the ratio."""
    assert _memory_script().main(["--store", str(store), "--runs", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    held = {
        mode: float(line.split("arrays held ")[1].split(" MiB")[0])
        for line in lines
        for mode in ("compact", "float64")
        if line.startswith(f"run 1 {mode}:")
    }
    # float32 as stored: about half the bytes of the float64 copies
    assert 0.3 * held["float64"] <= held["compact"] <= 0.6 * held["float64"]
    # the RSS figures are noise at this size (a few hundred KiB): only the line's form
    assert lines[-1].startswith("memory_ratio=")
    float(lines[-1].removeprefix("memory_ratio="))  # a number, or nan
