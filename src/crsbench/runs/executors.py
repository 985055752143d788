"""Where cells are extracted and evaluated. The driver always stays the single writer.

An executor turns a list of planned cells into :class:`CellOutcome` objects, in any order;
the driver commits each outcome to the store in one transaction as it arrives.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from crsbench.core.errors import ConfigError
from crsbench.core.workers import check_jobs, worker_pool
from crsbench.evaluation.cell import CellSettings, evaluate_cell
from crsbench.evaluation.cell_data import CellData
from crsbench.runs.extraction import RunExtraction
from crsbench.runs.plan import CellOutcome, CellPlan
from crsbench.runs.prepare import PreparedDataset, shift_targets_for


@dataclass(frozen=True)
class ExtractedCell:
    """One cell's features and evaluation inputs, ready for its probes."""

    plan: CellPlan
    data: CellData
    encoder_revision: str
    precision: dict[str, Any]
    extract_s: float


def extract_one_cell(
    ext: RunExtraction,
    plan: CellPlan,
    prepared: dict[str, PreparedDataset],
    *,
    progress: bool = True,
) -> ExtractedCell:
    """Extract (through the cache) one cell's features in this process."""
    from crsbench.runs.cell_inputs import cell_data
    from crsbench.runs.extract_cell import extract_cell_features

    t0 = time.perf_counter()
    prep = prepared[plan.dataset]
    targets = shift_targets_for(plan, prepared)
    feats, enc_rev = extract_cell_features(ext, plan, prep, targets, progress=progress)
    data = cell_data(plan, prep, feats, targets)
    precision = feats.get("precision", {})
    return ExtractedCell(plan, data, enc_rev, precision, time.perf_counter() - t0)


def evaluate_extracted(cell: ExtractedCell, settings: CellSettings) -> CellOutcome:
    """Fit and evaluate every probe of an extracted cell (in any process: numpy only)."""
    t0 = time.perf_counter()
    results = tuple(evaluate_cell(cell.data, settings))
    return CellOutcome(cell.plan, results, cell.encoder_revision, cell.extract_s,
                       time.perf_counter() - t0, cell.precision, cell.data.quarantined)  # fmt: skip


def run_one_cell(
    ext: RunExtraction,
    plan: CellPlan,
    prepared: dict[str, PreparedDataset],
    settings: CellSettings,
    *,
    progress: bool = True,
) -> CellOutcome:
    """Extract (through the cache) and evaluate one cell in this process."""
    return evaluate_extracted(extract_one_cell(ext, plan, prepared, progress=progress), settings)


class Executor(Protocol):
    """Runs cells and yields their outcomes as they complete."""

    def run_cells(
        self,
        ext: RunExtraction,
        cells: Sequence[CellPlan],
        prepared: dict[str, PreparedDataset],
        settings: CellSettings,
        *,
        progress: bool = True,
    ) -> Iterator[CellOutcome]: ...

    def close(self) -> None: ...


#: Extracted features a group of cells gathers (one cell at least) before its probes are
#: fitted in the worker processes of :class:`LocalExecutor`. Peak memory is about twice this
#: plus one cell: each worker is sent a copy of its cells, and the cell that closes a group
#: is extracted before the group is evaluated.
PROBE_GROUP_BYTES = 2 * 1024**3


class LocalExecutor:
    """In this machine: extraction in this process, the probes in ``jobs`` processes.

    With ``jobs=1`` each cell is extracted then evaluated, one after another. With more, cells
    are extracted (torch on every core) until :data:`PROBE_GROUP_BYTES` of features are held,
    then their probes (numpy on one BLAS thread each, no torch) are fitted in ``jobs`` worker
    processes while nothing else runs, and the next group is extracted. The probes compute on
    one BLAS thread in either case, so the rows are the same whatever ``jobs`` is.
    """

    def __init__(self, jobs: int | None = 1, group_bytes: int = PROBE_GROUP_BYTES) -> None:
        self.jobs = check_jobs(jobs)
        self.group_bytes = int(group_bytes)

    def run_cells(
        self,
        ext: RunExtraction,
        cells: Sequence[CellPlan],
        prepared: dict[str, PreparedDataset],
        settings: CellSettings,
        *,
        progress: bool = True,
    ) -> Iterator[CellOutcome]:
        """Yield each cell's outcome in plan order."""
        if self.jobs == 1:
            for plan in cells:
                yield run_one_cell(ext, plan, prepared, settings, progress=progress)
            return
        extracted = (extract_one_cell(ext, p, prepared, progress=progress) for p in cells)
        with worker_pool(self.jobs) as pool:
            for group in _groups(extracted, self.group_bytes):
                if len(group) == 1:  # nothing to share out: no pickling to a worker
                    yield evaluate_extracted(group[0], settings)
                    continue
                futures = [pool.submit(evaluate_extracted, c, settings) for c in group]
                for future in futures:
                    yield future.result()

    def close(self) -> None:
        """Nothing to release."""


def _groups(cells: Iterator[ExtractedCell], limit: int) -> Iterator[list[ExtractedCell]]:
    """Consecutive extracted cells, as many per group as :func:`features_nbytes` allows. When
    extracting a cell fails, the cells already extracted are yielded (to be evaluated and
    committed, as one cell after another would have been) before the error propagates."""
    group: list[ExtractedCell] = []
    held = 0
    try:
        for cell in cells:
            size = features_nbytes(cell.data)
            if group and held + size > limit:
                yield group
                group, held = [], 0
            group.append(cell)
            held += size
    except Exception:
        if group:
            yield group
        raise
    if group:
        yield group


def features_nbytes(data: CellData) -> int:
    """Bytes of the feature arrays of one cell (clean, perturbed and shift targets')."""
    arrays = [*data.features.values(), *data.perturbed.values(), *(s.X for s in data.shifts)]
    return int(sum(a.nbytes for a in arrays))


def make_executor(name: str, *, address: str | None = None, jobs: int | None = 1) -> Executor:
    """The executor called ``name``: ``local`` (probes in ``jobs`` processes, ``None``: every
    available core) or ``ray`` (when the ``ray`` extra is installed; a cell per task)."""
    if name == "local":
        return LocalExecutor(jobs)
    if name == "ray":
        from crsbench.runs.ray_executor import RayExecutor

        return RayExecutor(address=address)
    raise ConfigError(f"executor must be 'local' or 'ray'. Got {name!r} instead.")
