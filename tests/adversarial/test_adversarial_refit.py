"""The export's refit runs under the run's numeric settings, whatever the core count (#25).

The profile fits its probes in two worker processes (``--jobs 2``), each on one BLAS thread;
the export then refits in this process with its BLAS pool forced to two threads, as on a
2-core machine without ``OMP_NUM_THREADS=1``. The refit must still run on the run's one thread
and reproduce the stored metrics; the store is left as it was.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
from threadpoolctl import threadpool_info, threadpool_limits
from typer.testing import CliRunner

import crsbench.probes
from crsbench.cli import app
from crsbench.core.workers import THREAD_ENV_VARS
from crsbench.protocol import PROBE_BLAS_THREADS
from crsbench.testing.cohort import write_cohort


def _blas_threads() -> set[int]:
    return {int(p["num_threads"]) for p in threadpool_info() if p["user_api"] == "blas"}


def _runs(out: Path) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as con:
        return con.execute(
            "SELECT run_key, auroc, created_at FROM runs ORDER BY run_key"
        ).fetchall()


def test_profile_with_two_jobs_then_export_without_env(tmp_path: Path, monkeypatch) -> None:
    for var in THREAD_ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    csv, images = write_cohort(tmp_path / "data", 60, classes=("benign", "malignant"),
                               images_per_patient=1)  # fmt: skip
    out, model = tmp_path / "profile", tmp_path / "model"
    cli = CliRunner()
    r = cli.invoke(app, ["profile", "--data", str(csv), "--images", str(images),
                         "--label-columns", "diagnosis", "--encoders", "pixel",
                         "--out", str(out), "--device", "cpu", "--jobs", "2"])  # fmt: skip
    assert r.exit_code == 0, r.output
    before = _runs(out)
    seen: list[set[int]] = []
    real_fit = crsbench.probes.fit_probe_grid

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(_blas_threads())
        return real_fit(*args, **kwargs)

    monkeypatch.setattr(crsbench.probes, "fit_probe_grid", spy)
    with threadpool_limits(limits=2, user_api="blas"):  # a 2-core machine's default
        r = cli.invoke(app, ["export", "--store", str(out), "--encoder", "pixel",
                             "--out", str(model)])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert seen == [{PROBE_BLAS_THREADS}]  # the refit ran under the run's limit
    assert "reproduces the stored test metrics" in r.output
    meta = json.loads((model / "model.json").read_text(encoding="utf-8"))
    assert meta["provenance"]["metric_tolerance"] == 1e-9
    assert (model / "model.safetensors").is_file()
    assert _runs(out) == before  # the export changed nothing in the store
