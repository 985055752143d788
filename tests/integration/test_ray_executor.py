"""The Ray executor on a local Ray instance: same store as the local executor, dying workers.

One Ray session (2 CPUs) and one set of tiny synthetic datasets serve every test of this
module; the reference store comes from the local executor on the same config.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

ray = pytest.importorskip("ray")

from crsbench.config import BenchmarkConfig, parse_config  # noqa: E402
from crsbench.core.errors import CacheError, ConfigError, CrsbenchError, DataError  # noqa: E402
from crsbench.runs.extraction import RunExtraction  # noqa: E402
from crsbench.runs.pipeline import RunOptions, run_benchmark  # noqa: E402
from crsbench.store.columns import IDENTITY_COLUMNS  # noqa: E402

IDENTITY = list(IDENTITY_COLUMNS)
METRICS = ["auroc", "ece", "brier", "nll", "sens_at_spec90", "sens_at_spec95"]
SIZE = {
    "isic2019": 40,
    "aptos2019": 30,
    "chexpert_train": 60,
    "chexpert_valid": 10,
    "mimic_cxr": 30,
    "side": 48,
}


@pytest.fixture(scope="module")
def data_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from crsbench.datasets.synthetic import write_all

    root = tmp_path_factory.mktemp("ray_synth")
    write_all(root, size=SIZE, seed=0)
    return root


def reduced_config(data_root: Path, out: Path, cache: Path) -> BenchmarkConfig:
    """Two cells (ISIC; CheXpert with its MIMIC shift target), pixel encoder, 2 seeds."""
    data = {
        "encoders": [{"name": "pixel", "input_size": 32}],
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
        },
        "shifts": [{"source": "chexpert", "target": "mimic_cxr"}],
        "seeds": [0, 1],
        "fractions": [0.1, 1.0],
        "perturbations": {"names": ["gaussian_blur"], "severities": [1], "include_extra": False},
        "probes": {
            "logistic": {"c_grid": [0.1, 1.0], "max_iter": 100},
            "mlp": None,
            "knn": {"k": 3},
        },
        "recalibrators": ["temperature"],
        "layers": [0.5, 1.0],
        "output_dir": str(out),
        "cache_dir": str(cache),
        "device": "cpu",
        "num_workers": 0,
        "batch_size": 32,
    }
    return parse_config(data, base_dir=data_root)


def runs_table(out: Path) -> pd.DataFrame:
    """The ``runs`` table without the per-run timing columns, in identity order."""
    import duckdb

    con = duckdb.connect(str(out / "results.duckdb"), read_only=True)
    try:
        df = con.execute("SELECT * FROM runs").df()
    finally:
        con.close()
    df = df.drop(columns=["wall_time_s", "created_at"])
    return df.sort_values(IDENTITY).reset_index(drop=True)


def assert_same_runs(got: pd.DataFrame, want: pd.DataFrame) -> None:
    assert len(got) == len(want)
    assert not got.duplicated(IDENTITY).any()
    pd.testing.assert_frame_equal(got[IDENTITY], want[IDENTITY])
    for col in METRICS:
        np.testing.assert_array_equal(got[col].to_numpy(float), want[col].to_numpy(float))
    rest = [c for c in want.columns if c not in IDENTITY + METRICS]
    pd.testing.assert_frame_equal(got[rest], want[rest])


@pytest.fixture(scope="module")
def local_runs(data_root: Path, tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    base = tmp_path_factory.mktemp("ray_local_ref")
    cfg = reduced_config(data_root, base / "out", base / "cache")
    run_benchmark(cfg, RunOptions(executor="local", progress=False))
    df = runs_table(base / "out")
    undefined = df["details"].map(lambda d: json.loads(d).get("recal_choice") == "undefined")
    assert len(df) > 0 and df.loc[~undefined, "auroc"].notna().all()
    return df


@pytest.fixture(scope="module")
def ray_session() -> Any:
    """One local Ray instance for the module; executors use it and leave it running."""
    ray.init(
        address="local",  # never a cluster another `ray start` on this machine left behind
        num_cpus=2,
        _system_config={"worker_niceness": 0},  # Ray's 15 starves beside busy processes
        include_dashboard=False,
        log_to_driver=False,
        object_store_memory=200 * 1024**2,
        ignore_reinit_error=True,
    )
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def ray_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Feature cache filled by Ray workers (shared by the tests after the first)."""
    return tmp_path_factory.mktemp("ray_cache")


def _attempts(marker_dir: Path, tag: str) -> int:
    return len(list(marker_dir.glob(f"{tag}.*")))


def test_ray_store_equals_local_store(
    ray_session: Any, data_root: Path, local_runs: pd.DataFrame, ray_cache: Path, tmp_path: Path
) -> None:
    cfg = reduced_config(data_root, tmp_path / "out", ray_cache)
    summary = run_benchmark(cfg, RunOptions(executor="ray", progress=False))
    assert summary.n_records_written == summary.n_records_total == len(local_runs)
    assert_same_runs(runs_table(tmp_path / "out"), local_runs)
    # extraction really ran in the workers: the Ray cache holds the entries
    assert any((ray_cache / "objects").rglob("*.json"))
    assert ray_session.is_initialized()  # the executor did not own this session


def test_dying_workers_are_retried_nothing_lost_or_doubled(
    ray_session: Any,
    data_root: Path,
    local_runs: pd.DataFrame,
    ray_cache: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from crsbench.evaluation.cell import evaluate_cell
    from crsbench.runs import executors
    from crsbench.runs.extract_cell import extract_cell_features
    from crsbench.runs.ray_executor import RayExecutor

    markers = str(tmp_path / "markers")
    os.makedirs(markers)

    def crash_first(tag: str) -> None:
        """Record the attempt; kill this worker process on the first one."""
        n = len([f for f in os.listdir(markers) if f.startswith(tag + ".")])
        open(os.path.join(markers, f"{tag}.{n}.{os.getpid()}"), "w").close()
        if n == 0:
            os._exit(1)

    def extract_dies_once(ext, plan, prep, target, progress=False):  # type: ignore[no-untyped-def]
        if plan.dataset == "chexpert":
            crash_first("extract")
        return extract_cell_features(ext, plan, prep, target, progress=progress)

    def probe_dies_once(data, settings):  # type: ignore[no-untyped-def]
        if data.dataset == "isic2019":
            crash_first("probe")
        return evaluate_cell(data, settings)

    made: list[RayExecutor] = []

    def make(name: str, *, address: str | None = None, jobs: int | None = None) -> RayExecutor:
        ex = RayExecutor(
            address, max_retries=2, extract_fn=extract_dies_once, evaluate_fn=probe_dies_once
        )
        made.append(ex)
        return ex

    monkeypatch.setattr(executors, "make_executor", make)
    cfg = reduced_config(data_root, tmp_path / "out", ray_cache)
    summary = run_benchmark(cfg, RunOptions(executor="ray", progress=False))
    assert len(made) == 1
    # each injected fault fired once and its task succeeded on the second attempt
    assert _attempts(Path(markers), "extract") == 2
    assert _attempts(Path(markers), "probe") == 2
    pids = {f.name.split(".")[-1] for f in Path(markers).iterdir()}
    assert str(os.getpid()) not in pids  # the faults ran in workers, never in the driver
    assert summary.n_records_written == len(local_runs)
    assert_same_runs(runs_table(tmp_path / "out"), local_runs)


def test_exhausted_retries_fail_the_cell_and_a_resume_completes_the_store(
    ray_session: Any,
    data_root: Path,
    local_runs: pd.DataFrame,
    ray_cache: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from crsbench.evaluation.cell import evaluate_cell
    from crsbench.runs import executors
    from crsbench.runs.ray_executor import RayExecutor

    def probe_always_dies(data, settings):  # type: ignore[no-untyped-def]
        if data.dataset == "chexpert":
            os._exit(1)
        return evaluate_cell(data, settings)

    real_make = executors.make_executor
    monkeypatch.setattr(
        executors,
        "make_executor",
        lambda name, *, address=None, jobs=None: RayExecutor(
            address, max_retries=0, evaluate_fn=probe_always_dies
        ),
    )
    cfg = reduced_config(data_root, tmp_path / "out", ray_cache)
    with pytest.raises(CrsbenchError, match=r"pixel × chexpert.*died 1 times"):
        run_benchmark(cfg, RunOptions(executor="ray", progress=False))
    partial = runs_table(tmp_path / "out")
    assert set(partial["dataset"]) <= {"isic2019"}  # nothing of the failed cell was written
    monkeypatch.setattr(executors, "make_executor", real_make)
    summary = run_benchmark(cfg, RunOptions(executor="ray", progress=False))
    assert summary.n_records_written == len(local_runs) - len(partial)
    assert_same_runs(runs_table(tmp_path / "out"), local_runs)


@pytest.mark.parametrize("stage", ["extract", "probe"])
def test_task_errors_are_not_retried_and_keep_their_type(
    ray_session: Any, data_root: Path, ray_cache: Path, tmp_path: Path, stage: str
) -> None:
    from crsbench.runs.pipeline import cell_settings
    from crsbench.runs.plan import plan_cells
    from crsbench.runs.prepare import prepare_datasets
    from crsbench.runs.ray_executor import RayExecutor

    markers = str(tmp_path / "attempts")
    os.makedirs(markers)

    def raises(*args, **kwargs):  # type: ignore[no-untyped-def]
        open(os.path.join(markers, f"try.{len(os.listdir(markers))}"), "w").close()
        raise DataError("labels must be 0/1. Got 7 instead.")

    cfg = reduced_config(data_root, tmp_path / "out", ray_cache)
    prepared = prepare_datasets(cfg)
    mods = {n: p.dataset.card.modality for n, p in prepared.items()}
    cells = [c for c in plan_cells(cfg, mods) if c.dataset == "isic2019"]
    ex = RayExecutor(max_retries=3, **{f"{'evaluate' if stage == 'probe' else stage}_fn": raises})
    with pytest.raises(DataError, match=r"pixel × isic2019: labels must be 0/1\. Got 7"):
        list(
            ex.run_cells(
                RunExtraction.from_config(cfg), cells, prepared, cell_settings(cfg), progress=False
            )
        )
    ex.close()
    assert len(os.listdir(markers)) == 1  # an application error is not retried
    assert ray_session.is_initialized()


def test_probe_task_refuses_a_cache_entry_it_cannot_read(tmp_path: Path) -> None:
    from crsbench.core.types import Condition
    from crsbench.features.results import FeatureArray
    from crsbench.runs.ray_tasks import load_features, strip_features

    fa = FeatureArray(
        np.ones((3, 2)),
        np.array(["a", "b", "c"]),
        Condition("clean", 0),
        1.0,
        "ab" * 32,
        "computed",
    )
    stripped = strip_features({"clean": {1.0: fa}, "perturbed": {}})
    assert stripped["clean"][1.0].features.size == 0 and stripped["clean"][1.0].key == fa.key
    with pytest.raises(CacheError, match="filesystem shared by the driver and every Ray node"):
        load_features(stripped, tmp_path / "cache")


def test_missing_ray_extra_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from crsbench.runs.executors import make_executor

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ConfigError, match=r"crsbench\[ray\]"):
        make_executor("ray")


@pytest.mark.parametrize(
    ("device", "cluster_gpus", "asked"), [("auto", 0, 0.0), ("auto", 2, 1.0), ("cpu", 2, 0.0)]
)
def test_extraction_asks_for_a_gpu_only_when_the_cluster_has_one(
    ray_session: Any,
    data_root: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    device: str,
    cluster_gpus: int,
    asked: float,
) -> None:
    from crsbench.runs.ray_executor import RayExecutor

    cfg = reduced_config(data_root, tmp_path / "out", tmp_path / "cache")
    cfg = cfg.model_copy(update={"device": device})
    ex = RayExecutor()
    monkeypatch.setattr(ex, "cluster_gpus", lambda: float(cluster_gpus))
    assert ex.extraction_gpus(RunExtraction.from_config(cfg)) == asked
    ex.close()
    assert ray_session.is_initialized()


def test_cuda_device_without_cluster_gpus_is_a_config_error(
    ray_session: Any, data_root: Path, tmp_path: Path
) -> None:
    from crsbench.runs.ray_executor import RayExecutor

    cfg = reduced_config(data_root, tmp_path / "out", tmp_path / "cache")
    cfg = cfg.model_copy(update={"device": "cuda"})
    ex = RayExecutor()
    assert ex.cluster_gpus() == 0.0  # the local test instance has no GPU
    with pytest.raises(ConfigError, match="reports no GPU"):
        ex.extraction_gpus(RunExtraction.from_config(cfg))
    assert list(ex.run_cells(RunExtraction.from_config(cfg), [], {}, None, progress=False)) == []  # type: ignore[arg-type]
    ex.close()


@pytest.mark.parametrize(
    "bad", [{"max_retries": -1}, {"num_cpus_per_task": 0}, {"stall_timeout_s": 0}]
)
def test_bad_executor_parameters_are_config_errors(bad: dict[str, Any]) -> None:
    from crsbench.runs.ray_executor import RayExecutor

    with pytest.raises(ConfigError, match="must be"):
        RayExecutor(**bad)


class FakeRay:
    """Records the lifecycle calls the executor makes (no Ray process is started)."""

    def __init__(self, initialized: bool = False, fail: Exception | None = None) -> None:
        self.initialized = initialized
        self.fail = fail
        self.init_calls: list[dict[str, Any]] = []
        self.shutdowns = 0

    def is_initialized(self) -> bool:
        return self.initialized

    def init(self, **kwargs: Any) -> None:
        self.init_calls.append(kwargs)
        if self.fail is not None:
            raise self.fail
        self.initialized = True

    def shutdown(self) -> None:
        self.shutdowns += 1
        self.initialized = False


def _executor_with(monkeypatch: pytest.MonkeyPatch, fake: FakeRay, **kwargs: Any) -> Any:
    from crsbench.runs import ray_executor

    monkeypatch.setattr(ray_executor, "import_ray", lambda: fake)
    monkeypatch.setattr(ray_executor, "check_reachable", lambda *a, **k: None)
    return ray_executor.RayExecutor(**kwargs)


def test_local_instance_is_started_lazily_and_shut_down_on_close(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    fake = FakeRay()
    ex = _executor_with(monkeypatch, fake, num_cpus=2, object_store_bytes=123)
    assert fake.init_calls == []  # nothing starts before there is work
    ex.start()
    (kw,) = fake.init_calls
    assert kw["address"] == "local" and kw["num_cpus"] == 2 and kw["object_store_memory"] == 123
    assert kw["include_dashboard"] is False and kw["log_to_driver"] is False
    assert kw["_system_config"] == {"worker_niceness": 0}
    assert kw["ignore_reinit_error"] is True
    ex.close()
    ex.close()
    assert fake.shutdowns == 1
    with pytest.raises(CrsbenchError, match="closed"):
        ex.start()


@pytest.mark.parametrize("how", ["address", "env"])
def test_connecting_to_a_cluster_sends_no_local_resources(
    monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    fake = FakeRay()
    if how == "env":
        monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
        ex = _executor_with(monkeypatch, fake)
    else:
        monkeypatch.delenv("RAY_ADDRESS", raising=False)
        ex = _executor_with(monkeypatch, fake, address="10.0.0.1:6379")
    ex.start()
    (kw,) = fake.init_calls
    assert "num_cpus" not in kw and "object_store_memory" not in kw
    ex.close()  # disconnects this driver only; a cluster is never stopped by ray.shutdown()
    assert fake.shutdowns == 1


def test_an_existing_session_is_used_and_left_running(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeRay(initialized=True)
    ex = _executor_with(monkeypatch, fake, address="10.0.0.1:6379")
    ex.start()
    ex.close()
    assert fake.init_calls == [] and fake.shutdowns == 0 and fake.initialized


def test_a_failing_ray_init_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    fake = FakeRay(fail=ConnectionError("could not connect to 10.9.9.9:6379"))
    ex = _executor_with(monkeypatch, fake, address="10.9.9.9:6379")
    with pytest.raises(ConfigError, match=r"--address must name a running Ray cluster.*10\.9"):
        ex.start()
    assert fake.shutdowns == 0 and not ex.owns_instance


def test_an_address_where_nothing_listens_fails_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from crsbench.runs import ray_executor

    with socket.socket() as srv:  # a port that answers, then one that surely does not
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        port = srv.getsockname()[1]
        ray_executor.check_reachable(f"127.0.0.1:{port}", timeout_s=2)
        ray_executor.check_reachable(f"ray://127.0.0.1:{port}", timeout_s=2)
    fake = FakeRay()
    monkeypatch.setattr(ray_executor, "import_ray", lambda: fake)
    ex = ray_executor.RayExecutor(f"127.0.0.1:{port}", connect_timeout_s=2)
    with pytest.raises(ConfigError, match=rf"Got '127\.0\.0\.1:{port}' instead, where nothing"):
        ex.start()
    assert fake.init_calls == []  # refused by the socket check, before Ray's long init wait
    ray_executor.check_reachable("auto")  # left to Ray
    ray_executor.check_reachable(None)


class _StallClockAfterFirstCell:
    """Ray, except that the executor's stall clock starts once the first cell is delivered.

    The executor waits ``stall_timeout_s`` for *some* cell to finish. On a loaded machine the
    healthy cell may itself need longer than that; the test orders the events instead: the first
    wait blocks until a cell is ready (the healthy one: the other hangs), later waits keep the
    executor's own timeout.
    """

    def __init__(self, ray_module: Any) -> None:
        self._ray = ray_module
        self.delivered_first = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ray, name)

    def wait(self, refs: list[Any], *, num_returns: int, timeout: float | None) -> Any:
        if self.delivered_first:
            return self._ray.wait(refs, num_returns=num_returns, timeout=timeout)
        ready, rest = self._ray.wait(refs, num_returns=num_returns, timeout=None)
        self.delivered_first = True
        return ready, rest


@pytest.mark.timeout(900)  # a guard against a hang, not a duration under test
def test_a_hung_worker_ends_the_run_after_the_stall_timeout(
    ray_session: Any, data_root: Path, ray_cache: Path, tmp_path: Path
) -> None:
    import time

    from crsbench.evaluation.cell import evaluate_cell
    from crsbench.runs.pipeline import cell_settings
    from crsbench.runs.plan import plan_cells
    from crsbench.runs.prepare import prepare_datasets
    from crsbench.runs.ray_executor import RayExecutor

    def probe_hangs_on_chexpert(data, settings):  # type: ignore[no-untyped-def]
        if data.dataset == "chexpert":
            time.sleep(3600)
        return evaluate_cell(data, settings)

    cfg = reduced_config(data_root, tmp_path / "out", ray_cache)
    prepared = prepare_datasets(cfg)
    cells = plan_cells(cfg, {n: p.dataset.card.modality for n, p in prepared.items()})
    assert sorted(c.dataset for c in cells) == ["chexpert", "isic2019"]
    ex = RayExecutor(stall_timeout_s=4, evaluate_fn=probe_hangs_on_chexpert)
    ex._ray = gated = _StallClockAfterFirstCell(ex._ray)
    done = []
    with pytest.raises(
        CrsbenchError, match=r"stall_timeout_s=4 s.*1 pending cell\(s\): pixel × chexpert"
    ):
        for outcome in ex.run_cells(
            RunExtraction.from_config(cfg), cells, prepared, cell_settings(cfg), progress=False
        ):
            done.append(outcome.plan.dataset)
    assert gated.delivered_first
    assert done == ["isic2019"]  # the healthy cell was delivered before the run ended
    ex.close()
