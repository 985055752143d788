"""Run rows → validated run records: the provenance every record of a cell shares.

The cell evaluator and the LoRA stage return run rows (:data:`~crsbench.evaluation.cell_scoring.
RunRow`: identity, metric values, ``details``, ``wall_time_s``); :func:`to_records` adds the
provenance and validates them into :class:`~crsbench.store.RunRecord` objects for the store.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from crsbench.evaluation.cell_scoring import RunRow
from crsbench.evaluation.prediction_keeper import PREDICTIONS_KEY
from crsbench.store import METRIC_COLUMNS, RunRecord


@dataclass(frozen=True)
class Provenance:
    """What every record of one cell (or one LoRA seed) records of where it came from.

    ``precision``, the cell's precision decision, goes into every record's
    ``details["precision"]`` when given.
    """

    config_hash: str
    package_version: str
    encoder_revision: str
    dataset_revision: str
    anchors_version: str
    precision: Mapping[str, Any] | None = None


def _clean_metric(value: float | None) -> float | None:
    if value is None:
        return None
    v = float(value)
    return v if math.isfinite(v) else None


def to_record(row: RunRow, provenance: Provenance) -> RunRecord:
    """One run row → a validated :class:`RunRecord`; a non-finite metric becomes NULL with
    its reason in ``details["undefined"]``."""
    row = dict(row)
    row.pop(PREDICTIONS_KEY, None)  # per-sample predictions go to their own tables
    details = dict(row.pop("details", {}))
    wall = float(row.pop("wall_time_s", 0.0))
    undefined = dict(details.get("undefined") or {})
    for m in METRIC_COLUMNS:
        v = _clean_metric(row.get(m))
        if v is None and row.get(m) is not None and m not in undefined:
            undefined[m] = "not defined on this evaluation set (see excluded / warnings)"
        row[m] = v
    if undefined:
        details["undefined"] = undefined
    if provenance.precision:
        details["precision"] = dict(provenance.precision)
    return RunRecord(
        **row,
        config_hash=provenance.config_hash,
        package_version=provenance.package_version,
        encoder_revision=provenance.encoder_revision,
        dataset_revision=provenance.dataset_revision,
        anchors_version=provenance.anchors_version,
        wall_time_s=wall,
        details=details,
    )


def to_records(rows: Sequence[RunRow], provenance: Provenance) -> list[RunRecord]:
    """Run rows of :func:`~crsbench.evaluation.cell.evaluate_cell` → validated records."""
    return [to_record(row, provenance) for row in rows]
