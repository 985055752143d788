"""The test-set bootstrap's cells computed in a process pool give the sequential numbers."""

from __future__ import annotations

import os
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from crsbench.core.errors import ConfigError
from crsbench.core.workers import available_cores, check_jobs
from crsbench.stats.cell_pool import MIN_POOL_ELEMENTS, map_cells, pool_size
from crsbench.stats.patient_bootstrap import bootstrap_view, patient_seed_bootstrap
from crsbench.testing.planted import draw_world, planted_parameters


@pytest.fixture(scope="module")
def world():
    """Three planted encoders on CheXpert (with its MIMIC-CXR shift) and ISIC 2019."""
    params = planted_parameters(3, ("chexpert", "isic2019"), np.random.default_rng(11))
    return draw_world(params, 120, 3, np.random.default_rng(12))


def _worker_state(_: int) -> tuple[int, list[int]]:
    from threadpoolctl import threadpool_info

    return os.getpid(), [p["num_threads"] for p in threadpool_info()]


def test_one_and_two_jobs_give_bit_identical_intervals_tiers_and_rank_probabilities(world):
    seq = patient_seed_bootstrap(world.cells, n_replicates=300, seed=4, chunk=128, n_jobs=1)
    par = patient_seed_bootstrap(world.cells, n_replicates=300, seed=4, chunk=128, n_jobs=2)
    pd.testing.assert_frame_equal(seq.ranks, par.ranks, check_exact=True)
    pd.testing.assert_frame_equal(seq.pairwise, par.pairwise, check_exact=True)
    pd.testing.assert_frame_equal(seq.axis_intervals(), par.axis_intervals(), check_exact=True)
    for name in ("replicates", "axes", "point_axes", "ece_shrunk", "point_ece_shrunk"):
        np.testing.assert_array_equal(getattr(seq, name), getattr(par, name), err_msg=name)
    assert seq.ranks["p_rank1"].sum() == pytest.approx(1.0)
    assert 0 < seq.ranks["crs_ci_high"].sub(seq.ranks["crs_ci_low"]).min()


def test_cell_order_does_not_change_the_cells_numbers(world):
    forward = patient_seed_bootstrap(world.cells, n_replicates=60, seed=1, n_jobs=2)
    backward = patient_seed_bootstrap(world.cells[::-1], n_replicates=60, seed=1, n_jobs=1)
    k = len(world.cells)
    np.testing.assert_array_equal(forward.axes, backward.axes[:, ::-1])
    np.testing.assert_array_equal(forward.ece_shrunk, backward.ece_shrunk[:, k - 1 :: -1])


def test_pool_workers_are_other_processes_with_one_blas_thread():
    pytest.importorskip("threadpoolctl")
    states = map_cells(_worker_state, range(4), n_jobs=2)
    pids = {pid for pid, _ in states}
    assert os.getpid() not in pids
    assert 1 <= len(pids) <= 2
    assert all(n == 1 for _, threads in states for n in threads)


def test_one_process_computes_with_one_blas_thread_too():
    # a multi-threaded matrix product may sum in another order than a worker's single thread
    pytest.importorskip("threadpoolctl")
    states = map_cells(_worker_state, range(2), n_jobs=1)
    assert {pid for pid, _ in states} == {os.getpid()}
    assert all(n == 1 for _, threads in states for n in threads)


def test_results_keep_the_cells_order():
    assert map_cells(abs, [-3, 1, -2, 5, -4], n_jobs=2) == [3, 1, 2, 5, 4]


def test_worker_sees_only_what_the_bootstrap_reads(world):
    cell = world.cells[0]
    full = replace(cell, test=replace(cell.test, image_ids=np.arange(len(cell.test.y)),
                                      metadata={"sex": np.array(["F"] * len(cell.test.y))}),
                   val=cell.shift, extra_shifts=(cell.shift,))  # fmt: skip
    view = bootstrap_view(full)
    assert view.val is None and len(view.extra_shifts) == 1  # its ECE increase (verdict)
    assert view.extra_shifts[0][0].image_ids is None
    assert view.test.image_ids is None and dict(view.test.metadata) == {}
    np.testing.assert_array_equal(view.test.groups, cell.test.groups)
    assert view.clean is cell.clean and view.conditions is cell.conditions


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_jobs_must_be_a_positive_integer(bad):
    with pytest.raises(ConfigError, match="n_jobs"):
        check_jobs(bad)


def test_default_jobs_are_the_available_cores_when_the_work_is_large():
    assert check_jobs(None) == available_cores() == len(os.sched_getaffinity(0))
    assert pool_size(MIN_POOL_ELEMENTS, None) == available_cores()
    assert pool_size(MIN_POOL_ELEMENTS - 1, None) == 1
    assert pool_size(10, 3) == 3


class _Unpicklable:
    """A cell that cannot be pickled (as a large one should not be)."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __reduce__(self):
        raise TypeError("this cell must not be pickled")


def _value(cell: _Unpicklable) -> int:
    return cell.value * 2


def _fails(cell: _Unpicklable) -> int:
    return cell.value // 0


def test_forked_workers_inherit_the_cells_instead_of_receiving_them_pickled():
    from crsbench.core.workers import forks_workers
    from crsbench.stats import cell_pool

    if not forks_workers():
        pytest.skip("workers are spawned here: cells are pickled")
    cells = [_Unpicklable(v) for v in (3, 1, 4, 1, 5)]
    assert map_cells(_value, cells, n_jobs=2) == [6, 2, 8, 2, 10]
    assert cell_pool._INHERITED == {}  # nothing kept after the map
    with pytest.raises(ZeroDivisionError):
        map_cells(_fails, cells, n_jobs=2)
    assert cell_pool._INHERITED == {}


class _RecordingPool:
    """An in-process stand-in for the worker pool that records what it is given, in order."""

    def __init__(self, seen: list) -> None:
        self.seen = seen

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def map(self, fn, items):
        items = list(items)
        self.seen.extend(items)
        return [fn(x) for x in items]


def test_the_largest_cells_are_started_first_and_results_keep_the_cells_order(monkeypatch):
    from crsbench.stats import cell_pool

    seen: list = []
    monkeypatch.setattr(cell_pool, "worker_pool", lambda jobs: _RecordingPool(seen))
    cells = [-3, 1, -2, 5, -4]
    sizes = [10, 50, 20, 5, 40]
    assert map_cells(abs, cells, n_jobs=2, sizes=sizes) == [3, 1, 2, 5, 4]
    started = [cells[x] if cell_pool.forks_workers() else x for x in seen]
    assert started == [1, -4, -2, -3, 5]  # by size: 50, 40, 20, 10, 5
    assert cell_pool._INHERITED == {}
