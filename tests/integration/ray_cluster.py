"""A Ray cluster of separate processes on loopback: a head and worker nodes, each its own
``ray start --block`` in its own process group, so that one node can be killed whole.

Token authentication is disabled for these processes only (``RAY_AUTH_MODE=disabled``): the
cluster listens on 127.0.0.1 and lives for one test module. Nothing here calls ``ray stop``,
which would stop every Ray process on the machine, other tests' included.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RAY = str(Path(sys.executable).with_name("ray"))
#: Guards against a hang (nothing here waits on a clock for an order of events).
START_GUARD_S = 300.0
_QUIET = ("ray::IDLE", "ray::DashboardAgent", "ray::RuntimeEnvAgent")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cluster_env() -> dict[str, str]:
    """The environment of every process of the cluster and of its drivers."""
    return {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


class LocalRayCluster:
    """A head (no CPUs: it schedules, runs no task) and ``n_workers`` one-CPU worker nodes."""

    def __init__(self, n_workers: int = 2) -> None:
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.env = cluster_env()
        self.logs = Path(tempfile.mkdtemp(prefix="crsbench-ray-cluster-"))
        self.workers: list[subprocess.Popen[bytes]] = []
        self.head = self._start(
            "--head", f"--port={self.port}", "--num-cpus=0", "--include-dashboard=false"
        )
        try:
            self._wait_for_port()
            for _ in range(n_workers):  # one at a time: raylets started together time out
                self._add_worker()
        except BaseException:
            self.close()
            raise

    def _start(self, *args: str) -> subprocess.Popen[bytes]:
        cmd = [RAY, "start", "--block", "--node-ip-address=127.0.0.1", "--disable-usage-stats",
               "--object-store-memory=100000000", *args]  # fmt: skip
        log = open(self.logs / f"node{len(list(self.logs.iterdir()))}.log", "wb")
        return subprocess.Popen(cmd, env=self.env, start_new_session=True, stdout=log,
                                stderr=subprocess.STDOUT)  # fmt: skip

    def log_tails(self) -> str:
        """The last lines of every node's ``ray start`` output (for a failure message)."""
        return "\n".join(f"--- {p.name}\n" + "\n".join(p.read_text().splitlines()[-8:])
                         for p in sorted(self.logs.iterdir()))  # fmt: skip

    def _wait_for_port(self) -> None:
        deadline = time.monotonic() + START_GUARD_S
        while time.monotonic() < deadline:
            if self.head.poll() is not None:
                raise RuntimeError(f"ray start --head exited with {self.head.returncode}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.2)
        raise RuntimeError(f"the Ray head did not listen on {self.address}")

    def alive_cpu_nodes(self) -> int:
        """Worker nodes (with CPUs) the head reports alive, asked from a fresh process."""
        code = (
            f"import ray; ray.init(address={self.address!r}, log_to_driver=False, "
            "logging_level='ERROR'); "
            "print(sum(1 for n in ray.nodes() if n['Alive'] and n['Resources'].get('CPU')))"
        )
        out = subprocess.run([sys.executable, "-c", code], env=self.env, capture_output=True,
                             text=True, timeout=START_GUARD_S, check=True)  # fmt: skip
        return int(out.stdout.strip().splitlines()[-1])

    def _add_worker(self, tries: int = 3) -> None:
        """Start one more worker node and wait until the head reports it alive; a node whose
        start-up timed out on a loaded machine is started again (up to ``tries`` times)."""
        n = len(self.workers) + 1
        for _ in range(tries):
            proc = self._start(f"--address={self.address}", "--num-cpus=1")
            if self.wait_for_nodes(n, proc):
                self.workers.append(proc)
                return
            with contextlib.suppress(ProcessLookupError):  # what the failed start left
                os.killpg(proc.pid, signal.SIGKILL)
        raise RuntimeError(f"worker node {n} did not start in {tries} tries\n{self.log_tails()}")

    def wait_for_nodes(self, n: int, starting: subprocess.Popen[bytes] | None = None) -> bool:
        """Block until ``n`` worker nodes are alive (the event), within the start guard; False
        when the ``starting`` node's process ends first."""
        deadline = time.monotonic() + START_GUARD_S
        while self.alive_cpu_nodes() < n:
            if starting is not None and starting.poll() is not None:
                return False
            if time.monotonic() > deadline:
                raise RuntimeError(f"fewer than {n} Ray worker nodes came up\n{self.log_tails()}")
            time.sleep(1.0)
        return True

    def busy_task(self, worker: int) -> str | None:
        """The process title of a task running on worker node ``worker``, if any."""
        for pid in _descendants(self.workers[worker].pid):
            title = _cmdline(pid)
            if title.startswith("ray::") and not title.startswith(_QUIET):
                return title
        return None

    def kill_node(self, worker: int) -> int:
        """``kill -9`` every process of worker node ``worker`` (its raylet, its workers: every
        descendant of its ``ray start``, whatever their process group); returns how many."""
        root = self.workers[worker].pid
        pids = _descendants(root)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(root, signal.SIGKILL)
        self.workers[worker].wait(timeout=60)
        return len(pids)

    def close(self) -> None:
        """Kill every process of the cluster (each node's processes and process group)."""
        for proc in [*self.workers, self.head]:
            for pid in _descendants(proc.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)


def _descendants(root: int) -> list[int]:
    """``root`` and every process below it (children of children, ...), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()
