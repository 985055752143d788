"""Keys of a computation's inputs: a frame's values, the anchors' content, a store file.

:func:`anchors_key` is part of the key of the stored analyses (:mod:`crsbench.stats.compute`);
:func:`frame_key` and :func:`store_key` key the in-process memo of :mod:`crsbench.stats.shared`.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from crsbench.store.files import STORE_FILE


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
