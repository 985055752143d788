"""Forward passes side by side on CPU: a few threads, each on its share of torch's threads.

On a CPU a forward pass at the small inputs of CPU runs (a few images of 64-224 px) keeps
torch's intra-op threads waiting at every layer's barrier: two cores running one batch each
encode more images per second than both cores on one batch (ResNet-18 at 64 px: 593 img/s
against 472; EfficientNet-Lite0: 1,150 against 744). The extraction therefore hands each forward
chunk to one of :data:`CPU_FORWARD_THREADS` threads, each running torch on its share of the
threads the run may use, and takes the results back in the order they were handed out.

The chunks are the same as with one thread and every image is encoded alone along the batch
axis, so the features are the same bytes (tested for every encoder family); only the number of
torch threads changes, which torch's CPU kernels do not let into their results.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import Any, TypeVar

T = TypeVar("T")

#: Forward passes in flight at once on CPU (at most; never more than the usable threads).
CPU_FORWARD_THREADS = 2


def cap_torch_threads(torch: Any, on_cuda: bool) -> None:
    """On CPU, cap torch's intra-op threads to the usable cores (torch counts the machine's
    cores, not a cgroup quota's: :func:`crsbench.core.workers.available_cores`)."""
    from crsbench.core.workers import available_cores

    if not on_cuda:
        torch.set_num_threads(min(torch.get_num_threads(), available_cores()))


def forward_threads(torch_threads: int, on_cuda: bool, concurrent: bool) -> int:
    """How many forward passes run at once.

    Parameters
    ----------
    torch_threads : int
        Threads the extraction may use (torch's intra-op count, already capped by the usable
        cores).
    on_cuda : bool
        A CUDA device runs one stream of batches: 1.
    concurrent : bool
        Whether the encoder's module may run in two threads at once
        (:attr:`crsbench.encoders.base.Encoder.concurrent_forwards`).

    Returns
    -------
    int
        ``min(CPU_FORWARD_THREADS, torch_threads)`` on CPU for a concurrent encoder, else 1.
    """
    if on_cuda or not concurrent:
        return 1
    return max(1, min(CPU_FORWARD_THREADS, int(torch_threads)))


class ForwardThreads:
    """Run callables in ``n`` threads with torch's intra-op threads shared out among them.

    Inside the ``with`` block torch runs ``max(1, threads // n)`` intra-op threads (restored
    after); each call runs under ``torch.inference_mode()`` (a thread-local mode, entered in the
    worker thread). With ``n == 1`` a call runs at once in the caller's thread.

    Parameters
    ----------
    torch : module
        The torch module.
    n : int
        Threads (from :func:`forward_threads`).
    """

    def __init__(self, torch: Any, n: int) -> None:
        self.torch = torch
        self.n = max(1, int(n))
        self._pool: ThreadPoolExecutor | None = None
        self._saved_threads: int | None = None

    def __enter__(self) -> ForwardThreads:
        if self.n > 1:
            self._saved_threads = int(self.torch.get_num_threads())
            self.torch.set_num_threads(max(1, self._saved_threads // self.n))
            self._pool = ThreadPoolExecutor(self.n, thread_name_prefix="crsbench-forward")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if self._pool is not None:
                self._pool.shutdown(wait=True, cancel_futures=True)
                self._pool = None
        finally:  # also when the wait is interrupted
            if self._saved_threads is not None:
                self.torch.set_num_threads(self._saved_threads)
                self._saved_threads = None

    @property
    def in_flight(self) -> int:
        """Calls left unfinished before the caller waits for the oldest: one per thread (and
        none with one thread, whose calls are done when submitted)."""
        return self.n if self.n > 1 else 0

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        """Run ``fn(*args)`` (in a worker thread when ``n > 1``); its future."""
        if self._pool is not None:
            return self._pool.submit(self._inference, fn, *args)
        done: Future[T] = Future()
        try:
            done.set_result(self._inference(fn, *args))
        except Exception as err:  # handed to the caller by result(), as a thread would
            done.set_exception(err)
        return done

    def _inference(self, fn: Callable[..., T], *args: Any) -> T:
        with self.torch.inference_mode():
            return fn(*args)


def in_order(
    forwards: ForwardThreads, fn: Callable[..., T], calls: Iterable[tuple[Any, ...]]
) -> Iterator[T]:
    """``fn(*args)`` for each ``args`` of ``calls``, run in ``forwards`` and yielded in order.

    ``calls`` is drawn lazily: at most ``forwards.in_flight + 1`` calls are submitted and not yet
    yielded, so a generator of batches is never held in memory as a whole.
    """
    waiting: deque[Future[T]] = deque()
    for args in calls:
        waiting.append(forwards.submit(fn, *args))
        while len(waiting) > forwards.in_flight:
            yield waiting.popleft().result()
    while waiting:
        yield waiting.popleft().result()
