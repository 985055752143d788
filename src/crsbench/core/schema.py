"""Names shared by the results store and everything that reads it."""

from __future__ import annotations

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
