"""crsbench: choose a pretrained medical image encoder by its reliability profile.

Implements the CRS-Bench protocol (see ``docs/concepts.md``): frozen encoders, linear
probes over cached features, four reliability axes (discrimination, calibration, label
efficiency, robustness) and the Clinical Reliability Score with fixed anchors.

Heavy backends (torch, timm, open_clip, transformers, ray) are imported lazily by the
functions that need them; ``import crsbench`` is cheap.
"""

from __future__ import annotations

__all__ = ["__version__"]

try:
    from importlib.metadata import version as _version

    __version__ = _version("crsbench")
except Exception:  # pragma: no cover - running from a source tree without metadata
    __version__ = "0.1.0"
