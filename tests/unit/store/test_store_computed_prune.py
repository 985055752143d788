"""Writing a computed file prunes ``STORE/computed/``: per kind the newest few files crsbench
wrote stay, older ones go, and a file crsbench did not write is never touched."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import pandas as pd

from crsbench.store.computed import (
    COMPUTED_DIR,
    KEEP_PER_KIND,
    ComputedTables,
    input_key,
    read_computed,
    write_computed,
)


def _write(store: Path, n: int, kind: str | None = None) -> Path:
    inputs = {"n": n} if kind is None else {"n": n, "kind": kind}
    key = input_key(inputs)
    table = pd.DataFrame({"x": [n]})
    path = write_computed(store, ComputedTables({"t": table}, {}, inputs, key))
    os.utime(path, ns=(n * 10**9, n * 10**9))  # file n is older than file n + 1
    return path


def test_the_newest_files_of_each_kind_stay_and_older_ones_go(tmp_path: Path) -> None:
    analyses = [_write(tmp_path, n) for n in range(KEEP_PER_KIND + 2)]
    verdicts = [_write(tmp_path, 100 + n, "cohort_verdict") for n in range(2)]
    left = {p.name for p in (tmp_path / COMPUTED_DIR).iterdir()}
    # the last write pruned the analyses down to the newest KEEP_PER_KIND; both verdicts stay
    assert left == {p.name for p in analyses[-KEEP_PER_KIND:]} | {p.name for p in verdicts}
    newest = analyses[-1]
    assert read_computed(tmp_path, newest.stem).tables["t"]["x"].tolist() == [KEEP_PER_KIND + 1]


def test_the_file_just_written_stays_even_when_older_by_its_time(tmp_path: Path) -> None:
    future = 4_102_444_800 * 10**9  # 2100: every earlier file looks newer than the next write
    for n in range(KEEP_PER_KIND):
        path = _write(tmp_path, 50 + n)
        os.utime(path, ns=(future + n, future + n))
    key = input_key({"n": 1})
    path = write_computed(
        tmp_path, ComputedTables({"t": pd.DataFrame({"x": [1]})}, {}, {"n": 1}, key)
    )
    left = sorted(p.name for p in (tmp_path / COMPUTED_DIR).glob("*.zip"))
    assert path.name in left and len(left) == KEEP_PER_KIND  # the oldest earlier file went
    assert input_key({"n": 50}) + ".zip" not in left


def test_files_crsbench_did_not_write_are_never_removed(tmp_path: Path) -> None:
    folder = tmp_path / COMPUTED_DIR
    folder.mkdir()
    foreign = {
        "notes.txt": b"mine",
        "0123456789abcdef01234567.zip": b"not a zip",  # a crsbench-like name, not its file
        "my_tables.zip": b"PK",
    }
    for name, blob in foreign.items():
        (folder / name).write_bytes(blob)
    other_key = folder / "aaaaaaaaaaaaaaaaaaaaaaaa.zip"  # a zip whose manifest names another key
    with zipfile.ZipFile(other_key, "w") as zf:
        zf.writestr("manifest.json", json.dumps({"key": "bbbbbbbbbbbbbbbbbbbbbbbb", "inputs": {}}))
    os.utime(other_key, ns=(0, 0))
    for name in foreign:
        os.utime(folder / name, ns=(0, 0))  # the oldest files there
    for n in range(KEEP_PER_KIND + 3):
        _write(tmp_path, n + 1)
    left = {p.name for p in folder.iterdir()}
    assert set(foreign) | {other_key.name} <= left
    assert len(left) == len(foreign) + 1 + KEEP_PER_KIND
