"""Independent cells of a bootstrap computed in a pool of worker processes.

The test-set bootstrap's cells are independent: each cell's replicate metrics are a pure
function of its predictions, the replicate numbers and the bootstrap's seed (the resample
counts come from :mod:`crsbench.stats.resample`). :func:`map_cells` runs one function over the
cells in ``n_jobs`` processes and returns the results in the cells' order. Each worker is
limited to one BLAS / OpenMP thread (through ``threadpoolctl``, and the usual environment
variables for libraries loaded later) so that ``n_jobs`` processes do not each start a thread
per core; ``n_jobs=1`` computes under the same limit, because a multi-threaded matrix product
may sum in another order (ECE replicates differed by ~1e-16 at 30,000 test images), and so a
pool gives bit-identical numbers to one process.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from typing import TypeVar

from crsbench.core.errors import ConfigError

T = TypeVar("T")
R = TypeVar("R")

#: Environment variables that cap the threads of BLAS / OpenMP libraries loaded after them.
THREAD_ENV_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                   "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")  # fmt: skip


def available_cores() -> int:
    """CPU cores this process may run on (its affinity mask; the CPU count where there is
    none)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def check_jobs(n_jobs: int | None) -> int:
    """The number of worker processes ``n_jobs`` asks for: ``None`` → every available core.

    Raises
    ------
    ConfigError
        When ``n_jobs`` is not ``None`` or a positive integer.
    """
    if n_jobs is None:
        return available_cores()
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs < 1:
        raise ConfigError(f"n_jobs (--jobs) must be a positive integer. Got {n_jobs!r} instead.")
    return n_jobs


#: Below this many elements of work (for the test-set bootstrap: replicate × test row × label
#: × prediction), ``n_jobs=None`` computes in one process: a pool costs about a second to
#: start and to send the cells.
MIN_POOL_ELEMENTS = 200_000_000


def pool_size(n_elements: int, n_jobs: int | None) -> int:
    """Worker processes for ``n_elements`` of work: ``n_jobs`` when given (checked by
    :func:`check_jobs`), else every available core, or 1 below :data:`MIN_POOL_ELEMENTS`."""
    jobs = check_jobs(n_jobs)
    return 1 if n_jobs is None and n_elements < MIN_POOL_ELEMENTS else jobs


def limit_worker_threads() -> None:
    """Cap this process's BLAS / OpenMP thread pools at one thread (a worker's initializer)."""
    for var in THREAD_ENV_VARS:
        os.environ[var] = "1"
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        return
    threadpool_limits(limits=1)


def one_blas_thread() -> AbstractContextManager:
    """A context in which this process's BLAS / OpenMP pools run one thread (no-op without
    ``threadpoolctl``)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        return nullcontext()
    return threadpool_limits(limits=1)


def _context() -> multiprocessing.context.BaseContext:
    """``fork`` on Linux (workers start at once and share the parent's imports), ``spawn``
    elsewhere (forking a process with system frameworks loaded is unsafe on macOS)."""
    return multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")


def map_cells(fn: Callable[[T], R], cells: Sequence[T], n_jobs: int = 1) -> list[R]:
    """``[fn(c) for c in cells]``, computed in ``min(n_jobs, len(cells))`` processes.

    Parameters
    ----------
    fn : callable
        A picklable function of one cell (a module-level function or a
        :func:`functools.partial` of one); each call must depend on its cell only.
    cells : sequence
        The cells; each is pickled to the worker that computes it, so pass the compact data a
        cell needs, not a whole store.
    n_jobs : int
        Worker processes (checked by :func:`check_jobs`); ``1`` computes in this process
        (with one BLAS thread, as a worker has).

    Returns
    -------
    list
        The results in the order of ``cells`` whatever order the workers finish in.
    """
    jobs = min(check_jobs(n_jobs), len(cells))
    if jobs <= 1:
        with one_blas_thread():
            return [fn(c) for c in cells]
    with ProcessPoolExecutor(jobs, mp_context=_context(), initializer=limit_worker_threads) as pool:
        return list(pool.map(fn, cells))
