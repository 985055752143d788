"""The analyses as a registry: small functions, each with its name, declared inputs and the
reason it is empty, evaluated once by :func:`evaluate`.

An analysis takes the :class:`AnalysisInputs` of a store and returns its table, or its table
and a headline for ``summary.json``. It may add tables beside its own (``inputs.side``: the
bootstrap's pairwise differences, the insertion trials, ...). It is skipped, with the reason
in ``summary["skipped"]``, only for a documented reason: it raised a
:class:`crsbench.core.errors.CrsbenchError` (too few encoders, no shift target, ...) or its
table is empty (its ``why_empty``). Anything else fails the command.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
import pandas as pd

from crsbench.core.errors import CrsbenchError
from crsbench.scoring.anchors import Anchors
from crsbench.store.stored_plan import StoredPlan

log = logging.getLogger(__name__)

#: What an analysis returns: its table, or its table and its headline.
Result: TypeAlias = pd.DataFrame | tuple[pd.DataFrame, dict]
#: Names an analysis may declare in ``needs`` (fields of :class:`AnalysisInputs`).
INPUT_NAMES: frozenset[str] = frozenset(
    {"runs", "cells", "board", "per_seed", "anchors", "plan", "store", "groups",
     "n_replicates", "seed", "interval", "n_jobs", "predictions", "test_set_axes"}
)  # fmt: skip


@dataclass
class AnalysisInputs:
    """Everything the analyses of one store read, computed once (scores before analyses)."""

    runs: pd.DataFrame
    cells: pd.DataFrame
    board: pd.DataFrame
    per_seed: pd.DataFrame
    anchors: Anchors
    plan: StoredPlan | None
    store: Path | None
    groups: dict[str, str] | None
    n_replicates: int
    seed: int
    interval: str
    n_jobs: int | None = None
    #: Tables written beside an analysis's own (name → table), filled as analyses run.
    side: dict[str, pd.DataFrame] = field(default_factory=dict)
    #: The test-patient bootstrap's per-cell axes (set by ``bootstrap``, read by ``verdict``).
    test_set_axes: Any = None
    #: The store's per-sample predictions of the complete cells (read once, on first use).
    predictions: dict | None = None


@dataclass(frozen=True)
class Analysis:
    """One registered analysis.

    Attributes
    ----------
    name : str
        Its table's name (``<name>.csv``).
    needs : tuple of str
        The fields of :class:`AnalysisInputs` it reads (checked against :data:`INPUT_NAMES`).
    run : callable
        ``run(inputs)`` → table or (table, headline).
    why_empty : str
        The reason given when its table is empty.
    """

    name: str
    needs: tuple[str, ...]
    run: Callable[[AnalysisInputs], Result]
    why_empty: str = "the store has no rows for this analysis"

    def __post_init__(self) -> None:
        unknown = sorted(set(self.needs) - INPUT_NAMES)
        if unknown:
            raise ValueError(
                f"analysis {self.name!r} must declare inputs among {sorted(INPUT_NAMES)}. "
                f"Got {unknown} instead."
            )


def jsonable(value: object) -> object:
    """``value`` with numpy scalars as Python ones and non-finite floats as ``None``."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, np.bool_ | bool):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value) if np.isfinite(value) else None
    return value


def records(df: pd.DataFrame) -> list[dict]:
    """The rows of ``df`` as JSON-able dicts."""
    return [jsonable(r) for r in df.to_dict(orient="records")]  # type: ignore[misc]


def evaluate(
    registry: tuple[Analysis, ...], inputs: AnalysisInputs, summary: dict
) -> dict[str, pd.DataFrame]:
    """Run every analysis of ``registry`` in order on ``inputs``; return every table (each
    analysis's own and those beside it, in the order written). ``summary["analyses"]``
    gets each headline (else the table's first 20 rows), ``summary["skipped"]`` each reason."""
    tables: dict[str, pd.DataFrame] = {}
    for analysis in registry:
        before, started = set(inputs.side), time.perf_counter()
        try:
            result = analysis.run(inputs)
        except CrsbenchError as exc:  # a documented reason (too few encoders, no target, ...)
            summary["skipped"][analysis.name] = str(exc)  # anything else fails the command
            result = None
        log.info("analysis %s: %.1f s", analysis.name, time.perf_counter() - started)
        tables.update({k: v for k, v in inputs.side.items() if k not in before})
        if result is None:
            continue
        table, headline = result if isinstance(result, tuple) else (result, None)
        if table is None or table.empty:
            summary["skipped"][analysis.name] = analysis.why_empty
            continue
        tables[analysis.name] = table
        summary["analyses"][analysis.name] = jsonable(headline) if headline else records(table)[:20]
    return tables
