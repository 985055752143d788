"""A damaged, empty or busy results store: a clear message, a way to recover, no traceback."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from store_fixtures import run_record
from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.store.records import RunRecord
from crsbench.store.writer import ResultsStore

HASH = "ab" * 32


def _record(seed: int) -> RunRecord:
    return run_record(seed)


def _store(folder: Path, n: int = 3) -> Path:
    with ResultsStore(folder, HASH, config_json='{"seeds": [0, 1, 2]}') as store:
        store.append([_record(s) for s in range(n)])
        store.aggregate()
        store.export("parquet", folder / "export")
    return folder


def _truncate(path: Path) -> None:
    with open(path, "r+b") as handle:
        handle.truncate(os.path.getsize(path) // 2)


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize(
    "command",
    [["score", "--store"], ["analyze", "--store"], ["report", "--out", "REPORT", "--store"]],
)
def test_truncated_store_names_the_way_to_recover(tmp_path: Path, command: list[str]) -> None:
    store = _store(tmp_path / "out")
    _truncate(store / "results.duckdb")
    args = [str(tmp_path / "r") if a == "REPORT" else a for a in command] + [str(store)]
    result = CliRunner().invoke(app, args)
    text = _flat(result.output)
    assert result.exit_code == 2, result.output
    assert "is damaged and cannot be read" in text and "crsbench store repair --store" in text
    assert "Traceback" not in result.output and not (store / "analysis").exists()


def test_truncated_store_is_named_by_the_writer_too(tmp_path: Path) -> None:
    from crsbench.core.errors import StoreError

    store = _store(tmp_path / "out")
    _truncate(store / "results.duckdb")
    with pytest.raises(StoreError, match="is damaged"):
        ResultsStore(store, HASH)


def test_repair_rebuilds_the_same_runs_from_the_export(tmp_path: Path) -> None:
    store = _store(tmp_path / "out")
    with ResultsStore(store, None, mode="r") as before:
        expected = before.runs_frame().sort_values("run_key").reset_index(drop=True)
        meta = before.meta
    _truncate(store / "results.duckdb")
    result = CliRunner().invoke(app, ["store", "repair", "--store", str(store)])
    assert result.exit_code == 0, result.output
    text = _flat(result.output)
    assert "rebuilt" in text and "3 run records" in text and "damaged" in text
    assert len(list((store / "damaged").glob("*.results.duckdb"))) == 1
    with ResultsStore(store, HASH, mode="r") as after:
        got = after.runs_frame().sort_values("run_key").reset_index(drop=True)
        assert after.meta["config_json"] == meta["config_json"]
        assert after.metrics_frame().shape[0] == 1
    pd.testing.assert_frame_equal(got.drop(columns=["created_at"]),
                                  expected.drop(columns=["created_at"]))  # fmt: skip
    again = CliRunner().invoke(app, ["store", "repair", "--store", str(store)])
    assert "nothing to repair" in _flat(again.output)


def test_analyze_on_an_empty_store_writes_nothing(tmp_path: Path) -> None:
    ResultsStore(tmp_path, HASH).close()
    result = CliRunner().invoke(app, ["analyze", "--store", str(tmp_path)])
    assert result.exit_code == 2 and "no run records" in _flat(result.output)
    assert not (tmp_path / "analysis").exists() and "Traceback" not in result.output


HOLDER = """
import sys, time
from crsbench.store.writer import ResultsStore
store = ResultsStore(sys.argv[1], "ab" * 32)
print("ready", flush=True)
time.sleep(60)
"""


def test_score_during_a_run_names_the_running_process(tmp_path: Path) -> None:
    store = _store(tmp_path / "out")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(store)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        result = CliRunner().invoke(app, ["score", "--store", str(store)])
        text = _flat(result.output)
        assert result.exit_code == 2 and f"pid {holder.pid}" in text
        assert "being written by a running crsbench" in text and "Traceback" not in text
    finally:
        holder.kill()
        holder.wait()
    time.sleep(0.1)


@pytest.mark.parametrize("command", ["score", "analyze", "report"])
def test_results_out_that_is_a_file_or_foreign_folder(tmp_path: Path, command: str) -> None:
    store = _store(tmp_path / "out")
    target = tmp_path / "target.txt"
    target.write_text("mine\n")
    result = CliRunner().invoke(app, [command, "--store", str(store), "--out", str(target)])
    assert result.exit_code == 2 and "is a file" in _flat(result.output)
    assert target.read_text() == "mine\n" and "Traceback" not in result.output
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "leaderboard.csv").write_text("mine\n")
    (foreign / "index.html").write_text("mine\n")
    result = CliRunner().invoke(app, [command, "--store", str(store), "--out", str(foreign)])
    assert result.exit_code == 2 and "was not written by crsbench" in _flat(result.output)
    assert (foreign / "leaderboard.csv").read_text() == "mine\n"
    assert (foreign / "index.html").read_text() == "mine\n"


def test_status_on_a_truncated_store_names_the_repair(tmp_path: Path) -> None:
    data = tmp_path / "datasets" / "isic"
    data.mkdir(parents=True)
    config = tmp_path / "config.yaml"
    out = tmp_path / "out"
    config.write_text(f"encoders: [pixel]\ndatasets:\n  isic2019: {{root: {data}}}\n")
    from crsbench.config import config_hash, load_config

    cfg = load_config(config, output_dir=out)
    with ResultsStore(out, config_hash(cfg)) as store:
        store.append([dataclasses.replace(_record(0), config_hash=config_hash(cfg))])
    _truncate(out / "results.duckdb")
    result = CliRunner().invoke(app, ["status", str(config), "--out", str(out)])
    text = _flat(result.output)
    assert result.exit_code == 2 and "crsbench store repair --store" in text
    assert "Traceback" not in result.output


def test_force_new_prints_what_it_moved(tmp_path: Path) -> None:
    from rich.console import Console

    from crsbench.runs.progress import RunProgress

    _store(tmp_path)
    (tmp_path / "scores").mkdir()
    with ResultsStore(tmp_path, "cd" * 32, force_new=True) as store:
        moved = [(str(a), str(b)) for a, b in store.moved_aside]
    console = Console(record=True, width=300)
    with RunProgress(console) as bar:
        bar("moved", {"moved": moved})
    text = console.export_text()
    assert f"moved {tmp_path / 'results.duckdb'} -> " in text and "superseded" in text
    assert f"moved {tmp_path / 'scores'} -> " in text


@pytest.mark.parametrize("command", ["score", "analyze", "report", "verdict"])
def test_a_store_of_a_newer_schema_is_refused_by_readers(tmp_path: Path, command: str) -> None:
    import duckdb

    store = _store(tmp_path / "out")
    con = duckdb.connect(str(store / "results.duckdb"))
    con.execute("UPDATE meta SET schema_version = 99")
    con.close()
    args = [command, "--store", str(store)] + (
        ["--out", str(tmp_path / "r")] if command == "report" else []
    )
    result = CliRunner().invoke(app, args)
    text = _flat(result.output)
    assert result.exit_code == 2, result.output
    assert "has schema version 99, newer than this crsbench reads (1)" in text
    assert "Traceback" not in result.output and not (tmp_path / "r").exists()
    assert not (store / "scores").exists() and not (store / "analysis").exists()
