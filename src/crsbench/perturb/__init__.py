"""Acquisition perturbations of test images: pure functions on uint8 numpy images.

The paper's five (Gaussian blur, JPEG, contrast, Rician noise, field-of-view crop) at three
severities, plus modality-appropriate noise (Poisson–Gaussian for radiographs, sensor noise
for photographs). Severity values: ``crsbench/resources/perturb/severities_v1.yaml``; see ``docs/perturbations.md``.
"""

from __future__ import annotations

from crsbench.perturb.api import apply, apply_batch, conditions, describe, named_conditions
from crsbench.perturb.registry import MODALITIES, PERTURBATIONS, PerturbationSpec
from crsbench.perturb.severities import (
    DEFAULT_TABLE_PATH,
    SeverityTable,
    build_table,
    load_severities,
)
from crsbench.protocol import (
    EXTRA_CONDITIONS,
    EXTRA_PERTURBATIONS,
    PAPER_CONDITIONS,
    PAPER_PERTURBATIONS,
    SEVERITIES,
)

__all__ = [
    "DEFAULT_TABLE_PATH",
    "EXTRA_CONDITIONS",
    "EXTRA_PERTURBATIONS",
    "MODALITIES",
    "PAPER_CONDITIONS",
    "PAPER_PERTURBATIONS",
    "PERTURBATIONS",
    "SEVERITIES",
    "PerturbationSpec",
    "SeverityTable",
    "apply",
    "apply_batch",
    "build_table",
    "conditions",
    "describe",
    "load_severities",
    "named_conditions",
]
