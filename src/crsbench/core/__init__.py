"""Shared building blocks: errors, registries, seeding, frozen result types."""

from __future__ import annotations

from crsbench.core.errors import (
    CacheError,
    ConfigError,
    CrsbenchError,
    DataError,
    DiskError,
    EncoderError,
    NotFittedError,
    RegistryError,
    StoreError,
)
from crsbench.core.registry import Registry
from crsbench.core.seeding import perturbation_seed, stable_rng, stable_seed

__all__ = [
    "CacheError",
    "ConfigError",
    "CrsbenchError",
    "DataError",
    "DiskError",
    "EncoderError",
    "NotFittedError",
    "Registry",
    "RegistryError",
    "StoreError",
    "perturbation_seed",
    "stable_rng",
    "stable_seed",
]
