"""Processes against one store: a second writer, stale locks, SIGKILL during appends."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from store_helpers import HASH, make_record
from store_worker import batch

from crsbench.core.errors import StoreError
from crsbench.store import ResultsStore, StoreLock, StoreLockWarning

HERE = Path(__file__).resolve().parent


def _spawn(*args: str) -> subprocess.Popen[str]:
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])
    )
    return subprocess.Popen(
        [sys.executable, str(HERE / "store_worker.py"), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _wait_for(proc: subprocess.Popen[str], prefix: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline() if proc.stdout else ""
        if line.startswith(prefix):
            return line
        if not line and proc.poll() is not None:
            raise AssertionError(
                f"worker exited early: {proc.stderr.read() if proc.stderr else ''}"
            )
    raise AssertionError(f"worker did not print {prefix!r} in {timeout} s")


def _sigkill_and_reap(proc: subprocess.Popen[str]) -> None:
    """``kill -9`` the worker (if it still runs) and collect its exit and pipes."""
    try:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def test_second_writer_refused_then_stale_lock_taken_over(tmp_path: Path) -> None:
    holder = _spawn("hold", str(tmp_path))
    try:
        _wait_for(holder, "ready")
        with pytest.raises(StoreError) as info:
            ResultsStore(tmp_path, HASH)
        msg = str(info.value)
        assert f"pid {holder.pid}" in msg and "in use by another process" in msg
        info_json = json.loads((tmp_path / ".lock").read_text())
        assert info_json["pid"] == holder.pid and info_json["hostname"] == socket.gethostname()
    finally:
        _sigkill_and_reap(holder)
    assert (tmp_path / ".lock").exists()  # a killed holder leaves its lock file behind
    with pytest.warns(StoreLockWarning, match=f"stale lock .* pid {holder.pid}"):
        store = ResultsStore(tmp_path, HASH)
    with store:
        store.append([make_record()])
        assert json.loads((tmp_path / ".lock").read_text())["pid"] == os.getpid()
    assert not (tmp_path / ".lock").exists()


def test_clean_release_lets_the_next_writer_in(tmp_path: Path) -> None:
    holder = _spawn("hold", str(tmp_path))
    _wait_for(holder, "ready")
    holder.communicate(input="", timeout=60)  # EOF → the worker closes the store and exits
    assert holder.returncode == 0
    with warnings_as_errors():
        ResultsStore(tmp_path, HASH).close()


class warnings_as_errors:
    def __enter__(self) -> None:
        import warnings

        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("error", StoreLockWarning)

    def __exit__(self, *exc: object) -> None:
        self._ctx.__exit__(*exc)


def test_stale_lock_file_of_dead_pid_taken_over(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = {"pid": dead.pid, "hostname": socket.gethostname(), "started_at": "2020-01-01T00:00:00"}
    (tmp_path / ".lock").write_text(json.dumps(stale))
    with pytest.warns(StoreLockWarning, match=f"pid {dead.pid}"):
        lock = StoreLock(tmp_path)
        lock.acquire()
    assert lock.held
    lock.release()
    assert not (tmp_path / ".lock").exists()


def test_lock_from_another_host_is_not_taken(tmp_path: Path) -> None:
    (tmp_path / ".lock").write_text(json.dumps({"pid": 1, "hostname": "other-node-17"}))
    with pytest.raises(StoreError, match="another host.*other-node-17"):
        ResultsStore(tmp_path, HASH)
    assert not (tmp_path / "results.duckdb").exists()  # refused before any work


def test_same_process_second_open_refused(tmp_path: Path) -> None:
    with ResultsStore(tmp_path, HASH):
        with pytest.raises(StoreError, match=f"pid {os.getpid()}"):
            ResultsStore(tmp_path, HASH)


def test_sigkill_during_appends_keeps_whole_batches(tmp_path: Path) -> None:
    size, kills = 400, 3
    rng = random.Random(20260101)
    for _ in range(kills):
        proc = _spawn("append", str(tmp_path), str(size))
        try:
            _wait_for(proc, "committed")
            time.sleep(rng.uniform(0.0, 0.6))
        finally:
            _sigkill_and_reap(proc)
        with pytest.warns(StoreLockWarning):
            store = ResultsStore(tmp_path, HASH)
        with store:
            frame = store.runs_frame()
            audit = store.audit()
        n_batches = len(frame) // size
        assert len(frame) == n_batches * size and n_batches >= 1
        assert audit["duplicate_keys"] == 0 and audit["missing_provenance"] == 0
        batch_of = frame["encoder"].str.split("_").str[0]
        assert sorted(batch_of.unique()) == [f"b{i:05d}" for i in range(n_batches)]
        for i in (0, n_batches - 1):  # first and last committed batch are complete and exact
            got = frame[batch_of == f"b{i:05d}"]
            want = batch(i, size)
            assert len(got) == size
            assert sorted(got["auroc"].tolist()) == sorted(want["auroc"].tolist())


def test_file_too_large_during_append_loses_nothing(tmp_path: Path) -> None:
    """RELIABILITY E3: EFBIG on commit → StoreError, exit non-zero, committed batches intact."""
    size = 1000
    proc = _spawn("efbig", str(tmp_path), str(size), str(2_500_000))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, err
    lines = out.splitlines()
    assert lines[-1].startswith("error StoreError") and "File too large" in lines[-1]
    committed = sum(1 for line in lines if line.startswith("committed"))
    assert committed >= 1
    store = ResultsStore(tmp_path, HASH)
    with store:
        assert store.count() == committed * size
        assert store.audit()["duplicate_keys"] == 0
