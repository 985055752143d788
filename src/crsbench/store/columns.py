"""The results store's column names, defined once: identity, metrics, provenance.

Everything that writes or reads the store (the writer, the validator, the pipeline, the
simulated stores of :mod:`crsbench.testing`, scoring, stats and the report) takes its column
lists from here.
"""

from __future__ import annotations

#: Version of the ``runs`` / ``metrics`` / ``meta`` table layout.
SCHEMA_VERSION = 1
#: The identity columns of one run record (table ``runs``), in order.
IDENTITY_COLUMNS: tuple[str, ...] = (
    "encoder",
    "dataset",
    "eval_dataset",
    "seed",
    "regime",
    "probe",
    "layer",
    "fraction",
    "condition",
    "severity",
    "recalibrator",
)
#: The identity columns by type: integers >= 0, numbers in (0, 1], non-empty strings.
INT_IDENTITY_COLUMNS: tuple[str, ...] = ("seed", "severity")
#: The largest value of an ``INTEGER`` column (DuckDB's 32-bit integer: ``seed``, ``severity``).
INTEGER_MAX = 2**31 - 1
FLOAT_IDENTITY_COLUMNS: tuple[str, ...] = ("layer", "fraction")
TEXT_IDENTITY_COLUMNS: tuple[str, ...] = tuple(
    c for c in IDENTITY_COLUMNS if c not in INT_IDENTITY_COLUMNS + FLOAT_IDENTITY_COLUMNS
)
#: The identity columns of one cell of the grid (encoder × probe dataset).
CELL_COLUMNS: tuple[str, ...] = ("encoder", "dataset")
#: The metric columns of table ``runs`` (NULL allowed, see :data:`REQUIRED_METRICS`).
METRIC_COLUMNS: tuple[str, ...] = (
    "auroc",
    "ece",
    "brier",
    "nll",
    "sens_at_spec90",
    "sens_at_spec95",
)
#: Metrics that may be NULL only with a reason in ``details["undefined"][metric]``.
REQUIRED_METRICS: tuple[str, ...] = ("auroc", "ece", "brier", "nll")
PROVENANCE_COLUMNS: tuple[str, ...] = (
    "run_key",
    "config_hash",
    "package_version",
    "encoder_revision",
    "dataset_revision",
    "anchors_version",
    "wall_time_s",
    "created_at",
    "schema_version",
    "details",
)
RUN_COLUMNS: tuple[str, ...] = IDENTITY_COLUMNS + METRIC_COLUMNS + PROVENANCE_COLUMNS
#: Provenance that differs between two honest computations of the same run.
VOLATILE_COLUMNS: tuple[str, ...] = ("wall_time_s", "created_at")
#: Table ``metrics`` groups the runs by every identity column but the seed.
GROUP_COLUMNS: tuple[str, ...] = tuple(c for c in IDENTITY_COLUMNS if c != "seed")
#: Columns two appends of the same ``run_key`` must agree on.
PAYLOAD_COLUMNS: tuple[str, ...] = tuple(c for c in RUN_COLUMNS if c not in VOLATILE_COLUMNS)
#: Table ``reliability``: one row per reliability-diagram bin of a clean, full-label run.
RELIABILITY_TABLE = "reliability"
RELIABILITY_COLUMNS: tuple[str, ...] = (
    "encoder", "dataset", "seed", "recalibrator", "bin", "conf", "acc", "count",
)  # fmt: skip
