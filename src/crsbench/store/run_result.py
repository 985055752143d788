"""One evaluated run before its provenance: what cell evaluation hands to the store.

The cell evaluator (frozen regime) and the LoRA stage return :class:`RunResult` objects; the
executors carry them unchanged (the Ray executor pickles them back to the driver), and
:func:`crsbench.runs.rows.to_record` adds the provenance every record of a cell shares,
giving the :class:`~crsbench.store.records.RunRecord` the writer stores. Nothing mutates a
result: a step that adds to one (the kept predictions, the cell's quarantine counts) makes a
new one with :meth:`RunResult.with_details` or :meth:`RunResult.with_prediction`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from crsbench.core.errors import StoreError
from crsbench.store.columns import METRIC_COLUMNS
from crsbench.store.details import RunDetails
from crsbench.store.predictions import SplitRows
from crsbench.store.records import RunIdentity

#: Per-sample predictions of a run: split → (the rows scored, their probabilities).
KeptPredictions = Mapping[str, tuple[SplitRows, np.ndarray]]


@dataclass(frozen=True)
class RunResult:
    """A run's identity, metric values, typed details and wall time (and, for a
    main-protocol run, its per-sample predictions).

    Attributes
    ----------
    identity : RunIdentity
    metrics : mapping metric → float
        Exactly the store's :data:`~crsbench.store.columns.METRIC_COLUMNS`; NaN where a metric
        is not defined on the evaluation set (the record stores NULL and the reason).
    details : RunDetails
    wall_time_s : float
        Seconds from the start of the run's work to its score.
    predictions : mapping split → (SplitRows, probabilities)
        Written to the predictions tables beside the record; empty for the other runs.

    Raises
    ------
    StoreError
        When ``metrics`` does not name exactly the metric columns.
    """

    identity: RunIdentity
    metrics: Mapping[str, float]
    details: RunDetails
    wall_time_s: float
    predictions: KeptPredictions = field(default_factory=dict)

    def __post_init__(self) -> None:
        if set(self.metrics) != set(METRIC_COLUMNS):
            missing = sorted(set(METRIC_COLUMNS) - set(self.metrics))
            extra = sorted(set(self.metrics) - set(METRIC_COLUMNS))
            raise StoreError(
                f"run {self.identity.as_dict()} must have the metrics {list(METRIC_COLUMNS)}. "
                f"Missing {missing}, unexpected {extra}."
            )

    def with_details(self, **sections: Any) -> RunResult:
        """A copy whose details have the given sections replaced."""
        return replace(self, details=replace(self.details, **sections))

    def with_prediction(self, split: str, rows: SplitRows, prob: np.ndarray) -> RunResult:
        """A copy that also keeps ``prob`` (scored on ``rows``) under ``split``."""
        return replace(self, predictions={**self.predictions, split: (rows, prob)})
