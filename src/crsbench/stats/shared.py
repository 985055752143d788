"""Results computed once inside a block: one store's leaderboard, analyses and report.

``crsbench demo`` scores, analyses and reports the same store in one process; the three read
the same predictions and run the same bootstrap, subgroup analysis and control-probe
comparison. Inside :func:`sharing_results` each such computation is keyed by every input it
depends on (a rewritten store, another seed or other replicates miss) and computed once;
outside the block nothing is kept.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from crsbench.stats.input_keys import anchors_key, frame_key, store_key

__all__ = ["anchors_key", "frame_key", "shared", "shared_on", "sharing_results", "store_key"]

T = TypeVar("T")

#: Results by (kind, key), inside :func:`sharing_results` only.
_SHARED: dict[tuple[str, Hashable], Any] | None = None


@contextmanager
def sharing_results() -> Iterator[None]:
    """Compute each shared result once inside the block (nested blocks share the outer's)."""
    global _SHARED
    outer, _SHARED = _SHARED, ({} if _SHARED is None else _SHARED)
    try:
        yield
    finally:
        _SHARED = outer


def shared(kind: str, key: Callable[[], Hashable], compute: Callable[[], T]) -> T:
    """``compute()``, or the result of the first call of the same ``kind`` and key inside
    :func:`sharing_results` (``key`` is only called inside the block)."""
    if _SHARED is None:
        return compute()
    full = (kind, key())
    if full not in _SHARED:
        _SHARED[full] = compute()
    return _SHARED[full]


def shared_on(kind: str, obj: object, params: Hashable, compute: Callable[[], T]) -> T:
    """Like :func:`shared` for a computation over the object ``obj`` itself (a result that
    :func:`shared` returned, such as the loaded predictions): kept with ``obj`` and found
    again only for that very object, never for another one that reuses its ``id``."""
    if _SHARED is None:
        return compute()
    full = (kind, (id(obj), params))
    hit = _SHARED.get(full)
    if hit is None or hit[0] is not obj:
        hit = _SHARED[full] = (obj, compute())
    return hit[1]
