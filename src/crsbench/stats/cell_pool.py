"""Independent cells of a bootstrap computed in a pool of worker processes.

The test-set bootstrap's cells are independent: each cell's replicate metrics are a pure
function of its predictions, the replicate numbers and the bootstrap's seed (the resample
counts come from :mod:`crsbench.stats.resample`). :func:`map_cells` runs one function over the
cells in ``n_jobs`` processes (:func:`crsbench.core.workers.worker_pool`, one BLAS thread each)
and returns the results in the cells' order; ``n_jobs=1`` computes under the same one-thread
limit, because a multi-threaded matrix product may sum in another order (ECE replicates
differed by ~1e-16 at 30,000 test images), and so a pool gives bit-identical numbers to one
process.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from functools import partial
from typing import TypeVar

from crsbench.core.workers import check_jobs, forks_workers, one_blas_thread, worker_pool

T = TypeVar("T")
R = TypeVar("R")


#: Below this many elements of work (for the test-set bootstrap: replicate × test row × label
#: × prediction), ``n_jobs=None`` computes in one process: a pool costs about a second to
#: start and to send the cells.
MIN_POOL_ELEMENTS = 200_000_000


def pool_size(n_elements: int, n_jobs: int | None) -> int:
    """Worker processes for ``n_elements`` of work: ``n_jobs`` when given (checked by
    :func:`check_jobs`), else every available core, or 1 below :data:`MIN_POOL_ELEMENTS`."""
    jobs = check_jobs(n_jobs)
    return 1 if n_jobs is None and n_elements < MIN_POOL_ELEMENTS else jobs


#: The cells of each map in progress, by its number: a forked worker inherits them (its
#: parent's memory, copied only where written) and is sent only their indices.
_INHERITED: dict[int, Sequence] = {}
_MAP_NUMBERS = itertools.count()


def _inherited_call(fn: Callable[[T], R], number: int, index: int) -> R:
    """``fn`` of cell ``index`` of map ``number``, read from the memory forked from the parent."""
    return fn(_INHERITED[number][index])


def map_cells(
    fn: Callable[[T], R], cells: Sequence[T], n_jobs: int = 1, sizes: Sequence[int] | None = None
) -> list[R]:
    """``[fn(c) for c in cells]``, computed in ``min(n_jobs, len(cells))`` processes.

    Parameters
    ----------
    fn : callable
        A picklable function of one cell (a module-level function or a
        :func:`functools.partial` of one); each call must depend on its cell only.
    cells : sequence
        The cells. Where workers are forked (Linux) they inherit the cells from this process's
        memory and are sent only their indices; elsewhere each cell is pickled to the worker
        that computes it, so pass the compact data a cell needs, not a whole store.
    n_jobs : int
        Worker processes (checked by :func:`check_jobs`); ``1`` computes in this process
        (with one BLAS thread, as a worker has).
    sizes : sequence of int, optional
        Each cell's work: the pool starts the largest first, so that no large cell is left
        for the end while the other workers wait (the results keep the cells' order).

    Returns
    -------
    list
        The results in the order of ``cells`` whatever order the workers finish in.
    """
    jobs = min(check_jobs(n_jobs), len(cells))
    if jobs <= 1:
        with one_blas_thread():
            return [fn(c) for c in cells]
    order = list(range(len(cells)))
    if sizes is not None:
        order.sort(key=lambda i: -sizes[i])
    if not forks_workers():
        with worker_pool(jobs) as pool:
            done = list(pool.map(fn, [cells[i] for i in order]))
    else:
        number = next(_MAP_NUMBERS)
        _INHERITED[number] = cells  # before the pool forks its workers
        try:
            with worker_pool(jobs) as pool:
                done = list(pool.map(partial(_inherited_call, fn, number), order))
        finally:
            del _INHERITED[number]
    out: list = [None] * len(cells)
    for i, result in zip(order, done, strict=True):
        out[i] = result
    return out
