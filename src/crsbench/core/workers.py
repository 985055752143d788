"""Worker processes for independent pieces of work, each on one BLAS / OpenMP thread.

Two stages fan independent cells out to processes: the probes of the frozen stage
(:class:`crsbench.runs.executors.LocalExecutor`) and the test-set bootstrap
(:mod:`crsbench.stats.cell_pool`). A worker is limited to one BLAS / OpenMP thread (through
``threadpoolctl``, and the usual environment variables for libraries loaded later) so that
``n`` processes do not each start a thread per core, and the sequential path computes under the
same limit, because a multi-threaded matrix product may sum in another order: a pool then gives
bit-identical numbers to one process.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from contextlib import AbstractContextManager, nullcontext

from crsbench.core.errors import ConfigError

#: Environment variables that cap the threads of BLAS / OpenMP libraries loaded after them.
THREAD_ENV_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                   "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")  # fmt: skip


#: Where a cgroup (v2) states this process's CPU quota ("max" or "QUOTA PERIOD").
CGROUP_CPU_MAX = "/sys/fs/cgroup/cpu.max"


def cgroup_cpu_limit(path: str = CGROUP_CPU_MAX) -> int | None:
    """Whole CPUs the cgroup's quota allows (rounded up), or None when there is no quota."""
    try:
        with open(path) as f:
            quota, period = f.read().split()[:2]
    except (OSError, ValueError):
        return None
    if quota == "max":
        return None
    try:
        return max(1, -(-int(quota) // int(period)))
    except (ValueError, ZeroDivisionError):
        return None


def available_cores() -> int:
    """CPU cores this process may use: its affinity mask (the CPU count where there is none),
    capped by a cgroup CPU quota (a container's or a cluster job's ``--cpus``)."""
    try:
        cores = max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    limit = cgroup_cpu_limit()
    return min(cores, limit) if limit is not None else cores


def prefer_sleeping_openmp_threads() -> None:
    """Let idle OpenMP threads of libraries loaded later sleep instead of spinning.

    libgomp (torch's OpenMP) spins waiting for work by default; beside other processes the
    spinning threads burn the time slices the working ones need. ``OMP_WAIT_POLICY=PASSIVE``
    is set unless the user chose a policy; it must be set before torch is imported.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


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


def init_worker(parent_pid: int) -> None:
    """A pool worker's initializer: one BLAS / OpenMP thread, and (Linux) death with the
    parent, so a ``kill -9`` of the parent leaves no orphan computing for nobody."""
    die_with_parent(parent_pid)
    limit_worker_threads()


def die_with_parent(parent_pid: int) -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux ``prctl``
    ``PR_SET_PDEATHSIG``; nothing elsewhere); exit at once if the parent is already gone."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - no prctl in this libc
        return
    if os.getppid() != parent_pid:  # the parent died before the request took effect
        os._exit(1)


def limit_worker_threads() -> None:
    """Cap this process's BLAS / OpenMP thread pools at one thread."""
    for var in THREAD_ENV_VARS:
        os.environ[var] = "1"
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        return
    threadpool_limits(limits=1)


def one_blas_thread() -> AbstractContextManager:
    """A context in which this process's BLAS / OpenMP pools run one thread."""
    return blas_thread_limit(1)


def blas_thread_limit(threads: int) -> AbstractContextManager:
    """A context in which this process's BLAS / OpenMP pools run at most ``threads`` threads
    (no-op without ``threadpoolctl``)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        return nullcontext()
    return threadpool_limits(limits=threads)


def blas_threads() -> int:
    """Threads this process's BLAS library may use now (1 in a worker process; 1 without
    ``threadpoolctl``)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        return 1
    counts = [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]
    return max(counts, default=1)


def _context() -> multiprocessing.context.BaseContext:
    """``fork`` on Linux (workers start at once and share the parent's imports), ``spawn``
    elsewhere (forking a process with system frameworks loaded is unsafe on macOS)."""
    return multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")


def forks_workers() -> bool:
    """Whether :func:`worker_pool`'s workers are forked (they start with a copy of this
    process's memory as it is when the pool starts them)."""
    return _context().get_start_method() == "fork"


def worker_pool(n_jobs: int) -> ProcessPoolExecutor:
    """A pool of ``n_jobs`` processes, each limited to one BLAS / OpenMP thread and killed
    with this process (:func:`init_worker`).

    Workers must not use torch: on Linux they are forked, and a forked child of a process
    whose OpenMP pool has run may hang in its first parallel region. The kernel kills the
    workers when the *thread* that started them ends (``PR_SET_PDEATHSIG``): submit from a
    thread that outlives the pool (the main thread, as every caller here does).
    """
    return ProcessPoolExecutor(
        check_jobs(n_jobs), mp_context=_context(), initializer=init_worker,
        initargs=(os.getpid(),),
    )  # fmt: skip
