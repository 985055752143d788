"""Probes on cached features (docs/protocol.md section 6). Never imports torch or PIL.

* :class:`LogisticProbe`: L2 logistic regression (softmax / one sigmoid per label).
* :func:`fit_probe_grid`: the batched engine, every C × every label subset of one cell.
* :class:`MLPProbe`, :class:`KNNProbe`: control probes.
"""

from __future__ import annotations

from crsbench.probes.fitted import FittedLinear
from crsbench.probes.grid import DEFAULT_MAX_ITER, DEFAULT_TOL, fit_probe_grid, linear_proba
from crsbench.probes.knn import KNNProbe
from crsbench.probes.logistic import LogisticProbe
from crsbench.probes.mlp import MLPProbe

__all__ = [
    "DEFAULT_MAX_ITER",
    "DEFAULT_TOL",
    "FittedLinear",
    "KNNProbe",
    "LogisticProbe",
    "MLPProbe",
    "fit_probe_grid",
    "linear_proba",
]
