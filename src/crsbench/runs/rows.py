"""Run results → validated run records: the provenance every record of a cell shares.

The cell evaluator and the LoRA stage return :class:`~crsbench.store.run_result.RunResult`
objects (identity, metric values, typed details, wall time); :func:`to_records` adds the
provenance and validates them into :class:`~crsbench.store.RunRecord` objects for the store.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from crsbench.store import METRIC_COLUMNS, RunRecord
from crsbench.store.run_result import RunResult

#: The reason a non-finite metric is NULL when its evaluation gave none.
NOT_DEFINED = "not defined on this evaluation set (see excluded / warnings)"


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


def to_record(result: RunResult, provenance: Provenance) -> RunRecord:
    """One run result → a validated :class:`RunRecord`; a non-finite metric becomes NULL with
    its reason in ``details["undefined"]`` (the per-sample predictions go to their own
    tables: see :func:`crsbench.evaluation.prediction_keeper.kept_predictions`)."""
    metrics = {m: _clean_metric(result.metrics[m]) for m in METRIC_COLUMNS}
    undefined = dict(result.details.undefined)
    for m, v in metrics.items():
        if v is None and m not in undefined:
            undefined[m] = NOT_DEFINED
    details = replace(result.details, undefined=undefined)
    if provenance.precision:
        details = replace(details, precision=dict(provenance.precision))
    return RunRecord(
        **result.identity.as_dict(),
        metrics=metrics,
        config_hash=provenance.config_hash,
        package_version=provenance.package_version,
        encoder_revision=provenance.encoder_revision,
        dataset_revision=provenance.dataset_revision,
        anchors_version=provenance.anchors_version,
        wall_time_s=float(result.wall_time_s),
        details=details,
    )


def to_records(results: Sequence[RunResult], provenance: Provenance) -> list[RunRecord]:
    """Run results of :func:`~crsbench.evaluation.cell.evaluate_cell` → validated records."""
    return [to_record(r, provenance) for r in results]
