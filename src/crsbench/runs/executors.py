"""Where cells are extracted and evaluated. The driver always stays the single writer.

An executor turns a list of planned cells into :class:`CellOutcome` objects, in any order;
the driver commits each outcome to the store in one transaction as it arrives.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Protocol

from crsbench.config import BenchmarkConfig
from crsbench.core.errors import ConfigError
from crsbench.runs.cell import CellSettings, evaluate_cell
from crsbench.runs.plan import CellOutcome, CellPlan
from crsbench.runs.prepare import PreparedDataset, shift_targets_for


def run_one_cell(
    cfg: BenchmarkConfig,
    plan: CellPlan,
    prepared: dict[str, PreparedDataset],
    settings: CellSettings,
    *,
    progress: bool = True,
) -> CellOutcome:
    """Extract (through the cache) and evaluate one cell in this process."""
    from crsbench.runs.cell_inputs import cell_data
    from crsbench.runs.extract_cell import extract_cell_features

    t0 = time.perf_counter()
    prep = prepared[plan.dataset]
    targets = shift_targets_for(plan, prepared)
    feats, enc_rev = extract_cell_features(cfg, plan, prep, targets, progress=progress)
    data = cell_data(plan, prep, feats, targets)
    t1 = time.perf_counter()
    rows = evaluate_cell(data, settings)
    t2 = time.perf_counter()
    return CellOutcome(
        plan, rows, enc_rev, t1 - t0, t2 - t1, feats.get("precision", {}), data.quarantined
    )


class Executor(Protocol):
    """Runs cells and yields their outcomes as they complete."""

    def run_cells(
        self,
        cfg: BenchmarkConfig,
        cells: Sequence[CellPlan],
        prepared: dict[str, PreparedDataset],
        settings: CellSettings,
        *,
        progress: bool = True,
    ) -> Iterator[CellOutcome]: ...

    def close(self) -> None: ...


class LocalExecutor:
    """In-process, one cell after another (the default)."""

    def run_cells(
        self,
        cfg: BenchmarkConfig,
        cells: Sequence[CellPlan],
        prepared: dict[str, PreparedDataset],
        settings: CellSettings,
        *,
        progress: bool = True,
    ) -> Iterator[CellOutcome]:
        """Yield each cell's outcome in plan order."""
        for plan in cells:
            yield run_one_cell(cfg, plan, prepared, settings, progress=progress)

    def close(self) -> None:
        """Nothing to release."""


def make_executor(name: str, *, address: str | None = None) -> Executor:
    """The executor called ``name`` (``local``; ``ray`` when the ``ray`` extra is installed)."""
    if name == "local":
        return LocalExecutor()
    if name == "ray":
        from crsbench.runs.ray_executor import RayExecutor

        return RayExecutor(address=address)
    raise ConfigError(f"executor must be 'local' or 'ray'. Got {name!r} instead.")
