"""In-process memo of decoded and perturbed images at the working resolution W.

Every encoder of a run receives the same degraded W x W images (the working size is the run's,
not an encoder's; :mod:`crsbench.features.resolution`), so an image decoded and perturbed for
the first encoder need not be decoded and perturbed again for the next ones. The memo keeps
each (image, condition) array the decode workers produced, keyed by everything that determines
its bytes: the file and its ``size:mtime_ns`` fingerprint, W, the decode policy, the condition
and severity, the perturbation function and the image id that seeds its stream. A hit returns
the very bytes a recomputation would give, so cache keys and stored features are unchanged.

Memory is bounded: entries are added until :data:`PIXEL_MEMO_BYTES` is reached, then no more
(a first-come policy: with encoders taken in turn over the same datasets, an LRU smaller than
the working set would evict every entry before its reuse). It is off unless switched on: the
pipeline's frozen stage runs inside :meth:`PixelMemo.sharing`, which empties it at the end. Decode workers in other processes (``num_workers > 0``) each hold their own copy
for the life of one loader, so the sharing happens in the default in-process loading.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from threading import Lock

import numpy as np

#: Most bytes of image arrays the memo holds (the demo needs about 200 MB at W = 128).
PIXEL_MEMO_BYTES = 768 * 2**20


class PixelMemo:
    """A bounded first-come store of read-only uint8 arrays by key.

    Parameters
    ----------
    max_bytes : int
        Arrays are kept until their total size would exceed this; later ones are not kept.
    """

    def __init__(self, max_bytes: int = PIXEL_MEMO_BYTES) -> None:
        self.max_bytes = int(max_bytes)
        self._store: dict[Hashable, np.ndarray] = {}
        self._bytes = 0
        self._lock = Lock()
        self.hits = self.misses = 0
        self.enabled = False

    @contextmanager
    def sharing(self) -> Iterator[PixelMemo]:
        """Switch the memo on for the ``with`` block; empty it (and switch off) after."""
        self.enabled = True
        try:
            yield self
        finally:
            self.enabled = False
            self.clear()

    def get(self, key: Hashable) -> np.ndarray | None:
        """The array kept under ``key`` (read-only), or None (always None when off)."""
        if not self.enabled:
            return None
        arr = self._store.get(key)
        if arr is None:
            self.misses += 1
        else:
            self.hits += 1
        return arr

    def put(self, key: Hashable, arr: np.ndarray) -> np.ndarray:
        """Keep a read-only copy of ``arr`` under ``key`` when on and it fits; return ``arr``."""
        with self._lock:
            if (
                self.enabled
                and key not in self._store
                and self._bytes + arr.nbytes <= self.max_bytes
            ):
                kept = np.array(arr, copy=True)
                kept.setflags(write=False)
                self._store[key] = kept
                self._bytes += kept.nbytes
        return arr

    @property
    def nbytes(self) -> int:
        """Bytes held."""
        return self._bytes

    def clear(self) -> None:
        """Drop every entry (and the hit counts)."""
        with self._lock:
            self._store.clear()
            self._bytes = 0
            self.hits = self.misses = 0


#: The process's memo, used by :class:`crsbench.features.loader.DecodeSet`.
PIXEL_MEMO = PixelMemo()
