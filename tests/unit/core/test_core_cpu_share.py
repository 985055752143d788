"""Sharing the machine: usable cores honour a cgroup quota, and idle OpenMP threads sleep."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from crsbench.core import workers


@pytest.mark.parametrize(
    ("text", "expected"),
    [("max 100000\n", None), ("150000 100000\n", 2), ("50000 100000\n", 1),
     ("200000 100000\n", 2), ("garbage\n", None)],
)  # fmt: skip
def test_cgroup_quota_in_whole_cpus(tmp_path: Path, text: str, expected: int | None) -> None:
    path = tmp_path / "cpu.max"
    path.write_text(text)
    assert workers.cgroup_cpu_limit(str(path)) == expected


def test_no_cgroup_file_is_no_limit(tmp_path: Path) -> None:
    assert workers.cgroup_cpu_limit(str(tmp_path / "absent")) is None


def test_available_cores_is_capped_by_the_quota(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    monkeypatch.setattr(workers, "cgroup_cpu_limit", lambda path=None: 3)
    assert workers.available_cores() == 3
    monkeypatch.setattr(workers, "cgroup_cpu_limit", lambda path=None: None)
    assert workers.available_cores() == 64


def test_the_command_line_lets_idle_openmp_threads_sleep() -> None:
    """The console entry sets OMP_WAIT_POLICY=PASSIVE before torch loads; a user's choice wins."""
    code = (
        "import os, sys; from crsbench import cli; "
        "cli.app = lambda: print(os.environ.get('OMP_WAIT_POLICY'), 'torch' in sys.modules); "
        "cli.main()"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)  # fmt: skip
    assert out.stdout.split() == ["PASSIVE", "False"]
    env["OMP_WAIT_POLICY"] = "ACTIVE"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)  # fmt: skip
    assert out.stdout.split() == ["ACTIVE", "False"]
