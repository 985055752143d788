"""Results computed once inside a block: one store's leaderboard, analyses and report.

``crsbench demo`` scores, analyses and reports the same store in one process; the three read
the same predictions and run the same bootstrap, subgroup analysis and control-probe
comparison. Inside :func:`sharing_results` each such computation is keyed by every input it
depends on (a rewritten store, another seed or other replicates miss) and computed once;
outside the block nothing is kept.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from crsbench.store.files import STORE_FILE

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


def frame_key(frame: pd.DataFrame) -> tuple:
    """The columns, dtypes and a hash of every value of ``frame``, in row order."""
    values = pd.util.hash_pandas_object(frame, index=False).to_numpy()
    digest = hashlib.sha256(values.tobytes()).hexdigest()
    return tuple(frame.columns), tuple(str(t) for t in frame.dtypes), digest


def anchors_key(anc: Any) -> tuple:
    """An :class:`crsbench.scoring.anchors.Anchors`' version, bounds, weights and panels."""
    panels = [("", anc.panel)] + sorted(anc.panel_by_dataset.items())
    digest = hashlib.sha256()
    for name, panel in panels:
        if isinstance(panel, np.ndarray):
            digest.update(name.encode() + np.ascontiguousarray(panel, dtype=np.float64).tobytes())
        else:  # the exact uniform reference (anchors v2): its name stands for its values
            digest.update(name.encode() + str(panel).encode())
    return anc.version, repr(anc.bounds), repr(sorted(anc.weights.items())), digest.hexdigest()


def store_key(store: str | Path | None) -> tuple | None:
    """The store file and its size and modification time (a rewritten store misses)."""
    if store is None:
        return None
    path = (Path(store) / STORE_FILE).resolve()
    try:
        st = path.stat()
    except OSError:
        return str(path), None
    return str(path), st.st_size, st.st_mtime_ns
