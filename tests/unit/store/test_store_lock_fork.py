"""A forked child of a lock holder (a pool worker, a data-loader worker) never keeps the
store locked: killed with ``kill -9``, the holder's lock is free at once even while its child
lives on; and pool workers die with their parent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest

from crsbench.store.lock import StoreLock, StoreLockWarning

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork, /proc")
SRC = str(Path(__file__).resolve().parents[3] / "src")


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited


def _start(code: str) -> tuple[subprocess.Popen, list[int]]:
    """Run ``code`` in a fresh interpreter; it prints the pids to watch, then ``ready``."""
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": SRC})  # fmt: skip
    pids = []
    for line in proc.stdout:
        if line.strip() == "ready":
            return proc, pids
        pids.append(int(line))
    raise AssertionError(f"the child process ended early (exit {proc.wait()})")


def test_a_forked_child_does_not_keep_a_killed_holders_lock(tmp_path):
    holder, (child,) = _start(f"""
        import os, time
        from crsbench.store.lock import StoreLock
        lock = StoreLock({str(tmp_path)!r}); lock.acquire()
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # os.fork has run the after-fork hooks when it returns here
            os.write(w, b"x"); time.sleep(60); os._exit(0)
        os.read(r, 1)  # the event, not a clock: the child is past its hooks
        print(pid, flush=True); print("ready", flush=True); time.sleep(60)
    """)  # fmt: skip
    try:
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        assert _alive(child)  # the plain forked child lives on...
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StoreLockWarning)
            lock = StoreLock(tmp_path)
            lock.acquire()  # ...but does not hold the lock
        assert lock.held
        lock.release()
    finally:
        os.kill(child, signal.SIGKILL)


def test_pool_workers_die_with_their_killed_parent(tmp_path):
    parent, workers = _start(f"""
        import os, pathlib, time
        from crsbench.core.workers import worker_pool
        marks = pathlib.Path({str(tmp_path)!r})
        def busy():  # runs after the worker's initializer; keeps that worker busy
            (marks / str(os.getpid())).touch(); time.sleep(60)
        pool = worker_pool(2)
        futures = [pool.submit(busy) for _ in range(2)]
        while len(list(marks.iterdir())) < 2:  # wait for the event: both workers started
            time.sleep(0.01)
        for pid in pool._processes: print(pid, flush=True)
        print("ready", flush=True); time.sleep(60)
    """)
    assert len(workers) == 2 and all(_alive(p) for p in workers)
    parent.send_signal(signal.SIGKILL)
    parent.wait(60)
    deadline = time.monotonic() + 60  # a guard against a hang: the workers exit at once
    while any(_alive(p) for p in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in workers)
