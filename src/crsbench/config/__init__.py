"""The benchmark config: one validated, frozen description of a whole benchmark grid.

A config is YAML parsed with :func:`yaml.safe_load` and validated by pydantic v2 models that
forbid unknown keys (every model has ``extra="forbid", frozen=True``). Validation errors are
raised as :class:`~crsbench.core.errors.ConfigError` listing each problem as
``key.path: message``; an unknown key carries a did-you-mean suggestion.

Three steps, kept apart so a config can be parsed without data or torch:

1. :func:`load_config` / :func:`parse_config` / :func:`load_packaged_config`: parse, validate,
   expand ``${VAR}`` / ``${VAR:-default}`` and ``${output_dir}`` in paths, make paths absolute.
2. :func:`validate_paths`: dataset roots, weight files and anchor files exist.
3. :func:`validate_names`: encoder, dataset and perturbation names are registered.

:func:`config_hash` is the sha256 of the canonical semantic content (see ``docs/config_and_store.md``).
"""

from __future__ import annotations

from crsbench.config.checks import validate_names, validate_paths
from crsbench.config.hashing import canonical_content, config_hash, config_json
from crsbench.config.loading import (
    load_config,
    load_packaged_config,
    packaged_config_path,
    parse_config,
    read_yaml_file,
)
from crsbench.config.models import (
    CONFIG_SCHEMA_VERSION,
    EXECUTION_FIELDS,
    OUTPUT_DIR_VAR,
    BenchmarkConfig,
    DatasetConfig,
    EncoderConfig,
    ExcludedCellConfig,
    KNNConfig,
    LogisticConfig,
    LoraConfig,
    MLPConfig,
    PerturbationConfig,
    PrecisionCheckConfig,
    ProbesConfig,
    RegimesConfig,
    ShiftConfig,
)

__all__ = [
    "CONFIG_SCHEMA_VERSION",
    "EXECUTION_FIELDS",
    "OUTPUT_DIR_VAR",
    "BenchmarkConfig",
    "ExcludedCellConfig",
    "DatasetConfig",
    "EncoderConfig",
    "KNNConfig",
    "LogisticConfig",
    "LoraConfig",
    "MLPConfig",
    "PerturbationConfig",
    "PrecisionCheckConfig",
    "ProbesConfig",
    "RegimesConfig",
    "ShiftConfig",
    "canonical_content",
    "config_hash",
    "config_json",
    "load_config",
    "read_yaml_file",
    "load_packaged_config",
    "packaged_config_path",
    "parse_config",
    "validate_names",
    "validate_paths",
]
