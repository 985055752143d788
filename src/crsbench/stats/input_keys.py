"""The anchors' content as a key: part of the key of the stored analyses
(:mod:`crsbench.stats.compute`)."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np


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
