"""Free blocks go back to the disk: on a clean close, and by ``crsbench store compact``.

The store is copied table by table into a fresh file renamed over it; every row stays, and
a disk that refuses the copy leaves the store as it was.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from store_helpers import HASH, make_frame
from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.core.errors import DiskError, StoreError
from crsbench.store import compact as compact_module
from crsbench.store.compact import compact_store_file, free_blocks
from crsbench.store.files import STORE_FILE
from crsbench.store.maintenance import compact_store
from crsbench.store.writer import ResultsStore


def _store_with_free_blocks(out: Path) -> pd.DataFrame:
    """A store of 600 run rows whose file holds ~20 MiB of free blocks (a scratch table
    written, checkpointed and dropped, as the checkpoints of a grid leave them)."""
    with ResultsStore(out, HASH) as store:
        store.append_frame(make_frame(600))
        store.con.execute(
            "CREATE TABLE scratch AS SELECT range AS i, md5(range::VARCHAR) || "
            "md5((range + 1)::VARCHAR) AS s FROM range(300000)"
        )
        store.con.execute("CHECKPOINT")
        store.con.execute("DROP TABLE scratch")
        store.close()  # not compacted: a plain close
        # reopened only to read what it holds
    with ResultsStore(out, HASH, mode="r") as store:
        return store.runs_frame()


@pytest.fixture
def low_thresholds(monkeypatch):
    monkeypatch.setattr(compact_module, "MIN_FREE_SHARE", 0.0)
    monkeypatch.setattr(compact_module, "MIN_FREE_BYTES", 1)


def _runs(out: Path) -> pd.DataFrame:
    with ResultsStore(out, HASH, mode="r") as store:
        return store.runs_frame()


def test_compacting_shrinks_the_file_and_keeps_every_row(tmp_path, low_thresholds):
    before_rows = _store_with_free_blocks(tmp_path)
    path = tmp_path / STORE_FILE
    free, total = free_blocks(path)
    assert free > 0
    result = compact_store(tmp_path)
    assert result.compacted and result.bytes_after < result.bytes_before
    assert free_blocks(path)[0] == 0
    pd.testing.assert_frame_equal(_runs(tmp_path), before_rows)
    assert not [p for p in os.listdir(tmp_path) if "compacting" in p]


def test_a_clean_close_compacts_and_a_close_on_error_does_not(tmp_path, low_thresholds):
    rows = _store_with_free_blocks(tmp_path)
    path = tmp_path / STORE_FILE
    size = path.stat().st_size
    with pytest.raises(RuntimeError), ResultsStore(tmp_path, HASH):
        raise RuntimeError("a cell failed")
    assert path.stat().st_size == size
    with ResultsStore(tmp_path, HASH):
        pass
    assert path.stat().st_size < size
    pd.testing.assert_frame_equal(_runs(tmp_path), rows)


def test_default_thresholds_leave_a_small_store_as_it_is(tmp_path):
    _store_with_free_blocks(tmp_path)
    path = tmp_path / STORE_FILE
    size = path.stat().st_size
    result = compact_store(tmp_path)
    assert not result.compacted and path.stat().st_size == size
    assert "left as it is" in result.line()
    assert compact_store(tmp_path, force=True).compacted


def test_a_full_disk_leaves_the_store_and_removes_the_copy(tmp_path, low_thresholds, monkeypatch):
    rows = _store_with_free_blocks(tmp_path)
    path = tmp_path / STORE_FILE
    data = path.read_bytes()

    def full(source: Path, target: Path) -> None:
        target.write_bytes(b"partial")
        raise duckdb.IOException(f'Could not write file "{target}": No space left on device')

    monkeypatch.setattr(compact_module, "_copy", full)
    with pytest.raises(DiskError) as err:
        compact_store_file(path)
    assert err.value.kind == "full"
    assert path.read_bytes() == data
    assert not [p for p in os.listdir(tmp_path) if "compacting" in p]
    with ResultsStore(tmp_path, HASH):  # a clean close only warns
        pass
    pd.testing.assert_frame_equal(_runs(tmp_path), rows)


def test_a_copy_that_loses_rows_is_not_renamed_over_the_store(
    tmp_path, low_thresholds, monkeypatch
):
    _store_with_free_blocks(tmp_path)
    path = tmp_path / STORE_FILE
    data = path.read_bytes()
    real = compact_module._copy

    def lossy(source: Path, target: Path) -> None:
        real(source, target)
        con = duckdb.connect(str(target))
        con.execute("DELETE FROM runs WHERE rowid % 2 = 0")
        con.close()

    monkeypatch.setattr(compact_module, "_copy", lossy)
    with pytest.raises(StoreError, match="table runs copied"):
        compact_store_file(path)
    assert path.read_bytes() == data


def test_the_command_compacts_and_refuses_a_folder_crsbench_did_not_write(tmp_path, low_thresholds):
    _store_with_free_blocks(tmp_path / "out")
    result = CliRunner().invoke(app, ["store", "compact", "--store", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "MiB ->" in result.output and "blocks were free" in result.output
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    result = CliRunner().invoke(app, ["store", "compact", "--store", str(tmp_path / "mine")])
    assert result.exit_code == 2 and "not written by crsbench" in result.output
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep"


def test_a_quote_in_the_folder_a_kept_mode_and_a_leftover_copy_removed(tmp_path, low_thresholds):
    out = tmp_path / "q'uote"
    rows = _store_with_free_blocks(out)
    path = out / STORE_FILE
    path.chmod(0o640)
    stale = out / f".{STORE_FILE}.compacting-999999"
    stale.write_bytes(b"left by a killed run")
    assert compact_store(out).compacted
    assert not stale.exists() and oct(path.stat().st_mode & 0o777) == "0o640"
    pd.testing.assert_frame_equal(_runs(out), rows)


def test_a_linked_store_is_never_replaced(tmp_path, low_thresholds):
    _store_with_free_blocks(tmp_path / "real")
    (tmp_path / "linked").mkdir()
    for name in os.listdir(tmp_path / "real"):
        if name != STORE_FILE:
            os.symlink(tmp_path / "real" / name, tmp_path / "linked" / name)
    os.symlink(tmp_path / "real" / STORE_FILE, tmp_path / "linked" / STORE_FILE)
    with pytest.raises(StoreError, match="symbolic link"):
        compact_store_file(tmp_path / "linked" / STORE_FILE)
    assert (tmp_path / "linked" / STORE_FILE).is_symlink()


def test_any_error_on_a_clean_close_only_warns(tmp_path, low_thresholds, monkeypatch, caplog):
    rows = _store_with_free_blocks(tmp_path)

    def busy(source: Path, target: Path) -> None:
        raise OSError(16, "Device or resource busy")

    monkeypatch.setattr(compact_module, "_copy", busy)
    with ResultsStore(tmp_path, HASH):
        pass
    assert "left" in caplog.text and "uncompacted" in caplog.text
    pd.testing.assert_frame_equal(_runs(tmp_path), rows)
