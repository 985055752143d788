"""The Ray executor on a real multi-node cluster (slow): a worker node lost mid-run, and a driver
killed and resumed.

The cluster is a head and two one-CPU worker nodes, each a ``ray start`` process on loopback
(:mod:`.ray_cluster`). The driver is ``crsbench run CONFIG --executor ray --address ...`` in a
fresh process, as a user runs it. Each test waits for an event (a task running on the node about
to be killed; a cell committed by the driver about to be killed), never for a clock; time limits
are guards against a hang. The store after the loss must equal the local executor's store.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("ray")

from crsbench.config import parse_config
from crsbench.runs.pipeline import RunOptions, run_benchmark

from .ray_cluster import START_GUARD_S, LocalRayCluster
from .test_ray_executor import assert_same_runs, runs_table

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups, /proc"),
]
SIZE = {"isic2019": 200, "chexpert_train": 160, "chexpert_valid": 10, "mimic_cxr": 60, "side": 64}
RUN_GUARD_S = 1200


@pytest.fixture(scope="module")
def data_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from crsbench.datasets.synthetic import write_all

    root = tmp_path_factory.mktemp("ray_cluster_data")
    write_all(root, size=SIZE, seed=0, names=("isic2019", "chexpert", "mimic_cxr"))
    return root


def grid(data_root: Path, out: Path) -> dict[str, Any]:
    """Four cells (a random CNN and the pixel baseline × ISIC and CheXpert with its MIMIC
    shift): extraction tasks of several seconds each on one CPU, long enough to be killed."""
    return {
        "encoders": [{"name": "random_cnn", "input_size": 64}, {"name": "pixel", "input_size": 32}],
        "datasets": {
            "isic2019": {"root": str(data_root / "isic2019")},
            "chexpert": {
                "root": str(data_root / "chexpert"),
                "options": {"uncertainty": "ignore", "frontal_only": True},
            },
            "mimic_cxr": {
                "root": str(data_root / "mimic_cxr"),
                "options": {"uncertainty": "ignore"},
            },
        },  # fmt: skip
        "shifts": [{"source": "chexpert", "target": "mimic_cxr"}],
        "seeds": [0, 1],
        "fractions": [0.1, 1.0],
        "perturbations": {
            "names": ["gaussian_blur", "jpeg"],
            "severities": [1, 3],
            "include_extra": False,
        },  # fmt: skip
        "probes": {
            "logistic": {"c_grid": [0.1, 1.0], "max_iter": 100},
            "mlp": None,
            "knn": {"k": 3},
        },  # fmt: skip
        "recalibrators": ["temperature"],
        "layers": [0.5, 1.0],
        "output_dir": str(out),
        "cache_dir": str(out) + "-cache",
        "device": "cpu",
        "num_workers": 0,
        "batch_size": 32,
    }


@pytest.fixture(scope="module")
def local_store(data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    out = tmp_path_factory.mktemp("ray_cluster_local") / "out"
    run_benchmark(
        parse_config(grid(data_root, out), base_dir=data_root), RunOptions(progress=False)
    )
    return runs_table(out)


@pytest.fixture(scope="module")
def cluster() -> Any:
    c = LocalRayCluster(n_workers=2)
    yield c
    c.close()


def start_driver(cluster: LocalRayCluster, data_root: Path, out: Path) -> subprocess.Popen[str]:
    """``crsbench run CONFIG --executor ray --address ...`` in a fresh process."""
    config = out.parent / f"{out.name}.yaml"
    config.write_text(yaml.safe_dump(grid(data_root, out)))
    cmd = [sys.executable, "-m", "crsbench.cli", "run", str(config), "--executor", "ray",
           "--address", cluster.address]  # fmt: skip
    return subprocess.Popen(cmd, env=cluster.env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)  # fmt: skip


def wait_for_busy_node(cluster: LocalRayCluster, driver: subprocess.Popen[str]) -> tuple[int, str]:
    """The first worker node seen running a task (the event), and that task's title."""
    deadline = time.monotonic() + RUN_GUARD_S
    while time.monotonic() < deadline:
        for node in range(len(cluster.workers)):
            title = cluster.busy_task(node)
            if title is not None:
                return node, title
        if driver.poll() is not None:
            raise AssertionError(f"the driver ended before any task ran:\n{driver.stdout.read()}")
        time.sleep(0.05)
    raise AssertionError("no task ran on a worker node")


def test_a_lost_worker_node_is_retried_and_the_store_equals_the_local_one(
    cluster: LocalRayCluster, data_root: Path, local_store: Any, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    driver = start_driver(cluster, data_root, out)
    node, title = wait_for_busy_node(cluster, driver)
    killed = cluster.kill_node(node)
    assert killed >= 2, title  # the raylet and the worker running the task at least
    text, _ = driver.communicate(timeout=RUN_GUARD_S)
    assert driver.returncode == 0, text[-3000:]
    assert "wrote 124 run records" in text, text[-3000:]
    assert_same_runs(runs_table(out), local_store)
    assert cluster.alive_cpu_nodes() == 1  # the run finished on the node that was left


def test_a_killed_driver_resumes_to_the_same_store(
    cluster: LocalRayCluster, data_root: Path, local_store: Any, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    driver = start_driver(cluster, data_root, out)
    assert driver.stdout is not None
    for line in driver.stdout:  # the event: the driver has committed a cell
        if line.startswith("cell done:"):
            break
    driver.send_signal(signal.SIGKILL)
    driver.wait(timeout=START_GUARD_S)
    resumed = start_driver(cluster, data_root, out)
    text, _ = resumed.communicate(timeout=RUN_GUARD_S)
    assert resumed.returncode == 0, text[-3000:]
    done_before = next(line for line in text.splitlines() if line.startswith("plan:"))
    assert "0 already done" not in done_before, done_before
    assert_same_runs(runs_table(out), local_store)


def test_without_address_a_local_instance_starts_beside_a_running_cluster(
    cluster: LocalRayCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ray start` leaves this machine's cluster address behind; the executor without
    ``--address`` still starts its own local instance (plain ``ray.init()`` would join)."""
    import ray

    from crsbench.runs.ray_executor import RayExecutor

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    ex = RayExecutor(num_cpus=1)
    try:
        ex.start()
        assert ex.owns_instance
        nodes = [n for n in ray.nodes() if n["Alive"]]
        assert len(nodes) == 1 and nodes[0]["Resources"].get("CPU") == 1.0
    finally:
        ex.close()
    assert not ray.is_initialized()
