"""`crsbench store repair` never touches a store in use, a folder it did not write, or a
store whose export cannot rebuild it."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from store_fixtures import run_record
from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.store.records import RunRecord
from crsbench.store.writer import ResultsStore

HASH = "ab" * 32
HOLDER = """
import sys, time
from crsbench.store.writer import ResultsStore
store = ResultsStore(sys.argv[1], "ab" * 32)
print("ready", flush=True)
time.sleep(60)
"""


def _record(seed: int) -> RunRecord:
    return run_record(seed)


def _store(folder: Path, formats: tuple[str, ...] = ("parquet",)) -> Path:
    with ResultsStore(folder, HASH, config_json='{"seeds": [0, 1, 2]}') as store:
        store.append([_record(s) for s in range(3)])
        store.aggregate()
        for fmt in formats:
            store.export(fmt, folder / "export")
    return folder


def _truncate(path: Path) -> None:
    with open(path, "r+b") as handle:
        handle.truncate(os.path.getsize(path) // 2)


def _snapshot(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


class _Said(str):
    """The output without whitespace (the console folds long paths anywhere): ``in`` tests
    a phrase without its whitespace too."""

    def __contains__(self, phrase: object) -> bool:
        return "".join(str(phrase).split()) in str(self)


def _repair(folder: Path):
    result = CliRunner().invoke(app, ["store", "repair", "--store", str(folder)])
    return result, _Said("".join(result.output.split()))


def test_repair_while_a_run_writes_names_the_process_and_moves_nothing(tmp_path: Path) -> None:
    store = _store(tmp_path / "out")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(store)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        before = _snapshot(store)
        result, text = _repair(store)
        assert result.exit_code == 2, result.output
        assert f"pid {holder.pid}" in text and "never touches a store in use" in text
        assert "Traceback" not in result.output
        assert not (store / "damaged").exists() and (store / "results.duckdb").is_file()
        after = _snapshot(store)
        assert after["results.duckdb"] == before["results.duckdb"]
    finally:
        holder.kill()
        holder.wait()
    time.sleep(0.1)


def test_repair_of_a_missing_folder_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "out"
    result, text = _repair(missing)
    assert result.exit_code == 2 and f"{missing} does not exist" in text
    assert "Traceback" not in result.output and not (tmp_path / "nowhere").exists()


def test_repair_of_a_foreign_folder_changes_nothing(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    (theirs / "export").mkdir(parents=True)
    (theirs / "notes.txt").write_text("my thesis\n")
    (theirs / "export" / "runs.csv").write_text("a,b\n1,2\n")
    before = _snapshot(theirs)
    result, text = _repair(theirs)
    assert result.exit_code == 2 and f"{theirs} holds no results store" in text
    assert "was not written by crsbench" in text and "Traceback" not in result.output
    assert _snapshot(theirs) == before and sorted(p.name for p in theirs.iterdir()) == [
        "export", "notes.txt",
    ]  # fmt: skip


def test_repair_with_a_damaged_export_moves_nothing(tmp_path: Path) -> None:
    store = _store(tmp_path / "out")
    _truncate(store / "results.duckdb")
    (store / "export" / "runs.parquet").write_bytes(b"PAR1 not really parquet")
    before = _snapshot(store)
    result, text = _repair(store)
    assert result.exit_code == 2, result.output
    assert f"{store / 'export' / 'runs.parquet'}" in text and "cannot be read" in text
    assert "Nothing was moved" in text and "Traceback" not in result.output
    assert _snapshot(store) == before and not (store / "damaged").exists()


def test_repair_falls_back_to_the_csv_export(tmp_path: Path) -> None:
    store = _store(tmp_path / "out", formats=("parquet", "csv"))
    with ResultsStore(store, None, mode="r") as before:
        keys = sorted(before.runs_frame()["run_key"])
    _truncate(store / "results.duckdb")
    (store / "export" / "runs.parquet").write_bytes(b"damaged")
    result, text = _repair(store)
    assert result.exit_code == 0, result.output
    assert f"3 run records from {store / 'export' / 'runs.csv'}" in text
    assert len(list((store / "damaged").glob("*.results.duckdb"))) == 1
    with ResultsStore(store, HASH, mode="r") as after:
        assert sorted(after.runs_frame()["run_key"]) == keys


@pytest.mark.parametrize("kind", ["file", "empty"])
def test_repair_of_a_file_or_an_empty_folder(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "target"
    if kind == "file":
        target.write_text("mine\n")
    else:
        target.mkdir()
    result, text = _repair(target)
    assert result.exit_code == 2 and str(target) in text and "Traceback" not in result.output
    assert not (tmp_path / "damaged").exists() and not (target / "damaged").exists()
    if kind == "file":
        assert target.read_text() == "mine\n"
    else:
        assert list(target.iterdir()) == []


def test_repair_when_damaged_is_a_file_names_it(tmp_path: Path) -> None:
    store = _store(tmp_path / "out")
    _truncate(store / "results.duckdb")
    (store / "damaged").write_text("my notes\n")
    before = _snapshot(store)
    result, text = _repair(store)
    assert result.exit_code == 2 and f"cannot move {store / 'results.duckdb'}" in text
    assert "Traceback" not in result.output and _snapshot(store) == before
