"""Shipped, versioned anchors files (``v1.yaml``, ...).

Load one with :func:`crsbench.scoring.load_anchors` (``load_anchors("v1")``); freeze a new
version from a results store with :func:`crsbench.scoring.freeze_anchors`.
"""

from __future__ import annotations

from crsbench.scoring.anchors import CURRENT_VERSION, load_anchors

__all__ = ["CURRENT_VERSION", "load_anchors"]
