"""The data files crsbench ships, in one place, read through :mod:`importlib.resources`.

One folder per kind of data::

    configs/      demo.yaml, paper.yaml             (crsbench.config.load_packaged_config)
    anchors/      v1.yaml, ...                      (crsbench.scoring.load_anchors)
    perturb/      severities_v1.yaml                (crsbench.perturb.load_severities)
    calibration/  recal_v1.yaml                     (crsbench.calibration.load_recal_protocol)
    label_maps/   <dataset>_v<N>.yaml               (crsbench.datasets.labelmap.load_label_map)
    pretraining/  v1.yaml                           (crsbench.pretraining.load_pretraining)
    throughput/   v1.yaml                           (crsbench.runs.estimate_data)
    dataset_sizes/ v1.yaml                          (crsbench.runs.estimate_data)
    operating_points/ v1.yaml                       (crsbench.stats.operating_point_settings)
    report/       report.css, sortable.js, weights.js (crsbench.report.html)
    consortium/   v1.yaml                           (crsbench.consortium.settings)

This module imports nothing else of the package, so every layer may read its data here; each
reader keeps its own parsing and its own error for a file that is not shipped.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

__all__ = ["resource_file", "resource_label", "resource_names", "resource_path"]


def resource_file(folder: str, name: str) -> Traversable:
    """The packaged file ``folder/name`` (it may not exist: check ``is_file()``).

    Parameters
    ----------
    folder : str
        One of the folders listed in this module's docstring, e.g. ``"configs"``.
    name : str
        File name inside it, e.g. ``"demo.yaml"``.
    """
    return resources.files(__name__).joinpath(folder).joinpath(name)


def resource_path(folder: str, name: str) -> Path:
    """:func:`resource_file` as a filesystem path (the package is installed as files)."""
    return Path(str(resource_file(folder, name)))


def resource_names(folder: str, suffix: str = ".yaml") -> list[str]:
    """Sorted names (``suffix`` removed) of the packaged files of ``folder`` ending in ``suffix``.

    Examples
    --------
    >>> resource_names("configs")
    ['demo', 'paper']
    """
    entries = resources.files(__name__).joinpath(folder).iterdir()
    return sorted(f.name[: -len(suffix)] for f in entries if f.name.endswith(suffix))


def resource_label(folder: str, name: str) -> str:
    """How messages and records name a packaged file: ``crsbench/resources/<folder>/<name>``."""
    return f"crsbench/resources/{folder}/{name}"
