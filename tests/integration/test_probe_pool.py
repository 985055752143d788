"""The local executor's probe pool: cells' probes fitted in worker processes give the same
records as one process, in plan order, and a group never holds more features than allowed."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

from crsbench.config import parse_config
from crsbench.runs import executors
from crsbench.runs.executors import ExtractedCell, LocalExecutor, _groups, features_nbytes
from crsbench.runs.extraction import RunExtraction
from crsbench.runs.pipeline import RunOptions, cell_settings, run_benchmark
from crsbench.runs.plan import plan_cells
from crsbench.runs.prepare import prepare_datasets
from crsbench.store.columns import IDENTITY_COLUMNS

from .runner_fixtures import tiny_config_dict, write_tiny_data

METRICS = ["auroc", "ece", "brier", "nll", "sens_at_spec90", "sens_at_spec95"]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_data(tmp_path_factory.mktemp("pool_data"))


def _config(data: Path, out: Path):
    return parse_config(tiny_config_dict(data, out, ("pixel", "random_cnn")), base_dir=data)


def _runs(out: Path) -> pd.DataFrame:
    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as con:
        runs = con.execute("SELECT * FROM runs").df()
    return runs.sort_values(list(IDENTITY_COLUMNS)).reset_index(drop=True)


def test_pool_records_equal_one_process_records(data, tmp_path):
    one = run_benchmark(_config(data, tmp_path / "one"), RunOptions(progress=False, jobs=1))
    two = run_benchmark(_config(data, tmp_path / "two"), RunOptions(progress=False, jobs=2))
    a, b = _runs(one.out_dir), _runs(two.out_dir)
    assert len(a) == len(b) == one.n_records_total
    pd.testing.assert_frame_equal(a[list(IDENTITY_COLUMNS)], b[list(IDENTITY_COLUMNS)])
    for m in METRICS:  # bit-identical: each worker fits on one BLAS thread, as one process does
        np.testing.assert_array_equal(a[m].to_numpy(), b[m].to_numpy(), err_msg=m)
    stages = two.stage_seconds
    assert stages["extract"] + stages["probes_and_metrics"] <= stages["total"]


_EVALUATE = executors.evaluate_extracted
_EVALUATED_HERE: list[int] = []


def _evaluate_noting_the_process(cell, settings):
    """The real evaluation, noting the process it ran in (a worker appends to its own copy)."""
    _EVALUATED_HERE.append(os.getpid())
    out = _EVALUATE(cell, settings)
    out.precision["pid"] = os.getpid()
    return out


def test_outcomes_come_in_plan_order_from_other_processes(data, tmp_path, monkeypatch):
    cfg = _config(data, tmp_path / "order")
    prepared = prepare_datasets(cfg)
    cells = plan_cells(cfg, {n: p.dataset.card.modality for n, p in prepared.items()})
    monkeypatch.setattr(executors, "evaluate_extracted", _evaluate_noting_the_process)
    got = list(LocalExecutor(jobs=2).run_cells(RunExtraction.from_config(cfg), cells, prepared, cell_settings(cfg),
                                               progress=False))  # fmt: skip
    assert [(o.plan.encoder, o.plan.dataset) for o in got] == [
        (c.encoder, c.dataset) for c in cells
    ]
    assert os.getpid() not in {o.precision["pid"] for o in got}
    assert _EVALUATED_HERE == []  # nothing was evaluated in this process


def test_groups_hold_at_most_the_byte_limit_and_one_cell_at_least():
    def cell(n_bytes: int) -> ExtractedCell:
        data = type("D", (), {"features": {1.0: np.zeros(n_bytes // 8)}, "perturbed": {},
                              "shifts": ()})()  # fmt: skip
        return ExtractedCell(None, data, "rev", {}, 0.0)

    sizes = [800, 800, 1600, 8000, 400, 400]
    groups = list(_groups(iter([cell(s) for s in sizes]), limit=2000))
    assert [[features_nbytes(c.data) for c in g] for g in groups] == [
        [800, 800], [1600], [8000], [400, 400]
    ]  # fmt: skip


def test_jobs_must_be_a_positive_integer():
    from crsbench.core.errors import ConfigError

    with pytest.raises(ConfigError, match="--jobs"):
        LocalExecutor(jobs=0)


def test_cells_extracted_before_a_failure_are_still_evaluated():
    def cell(n_bytes: int) -> ExtractedCell:
        data = type("D", (), {"features": {1.0: np.zeros(n_bytes // 8)}, "perturbed": {},
                              "shifts": ()})()  # fmt: skip
        return ExtractedCell(None, data, "rev", {}, 0.0)

    def extracted():
        yield cell(800)
        yield cell(800)
        raise OSError("disk full while extracting the third cell")

    got = _groups(extracted(), limit=10_000)
    assert [features_nbytes(c.data) for c in next(got)] == [800, 800]  # evaluated, committed
    with pytest.raises(OSError, match="third cell"):
        next(got)
