"""The process clock counts from the process start (interpreter and imports included)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from crsbench.core.process_clock import seconds_since_process_start


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_fresh_process_counts_its_own_start_and_sleep():
    code = (
        "import time; time.sleep(0.6); "
        "from crsbench.core.process_clock import seconds_since_process_start as s; print(s())"
    )
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    age = float(out.stdout)
    assert 0.6 <= age <= wall + 0.02  # clock ticks are 10 ms


def test_this_process_is_older_than_a_moment_ago():
    first = seconds_since_process_start()
    time.sleep(0.05)
    assert seconds_since_process_start() >= first
