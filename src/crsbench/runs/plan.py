"""Plan the grid: which cells, which extractions and exactly which run records a config makes.

The identities enumerated here are the ones :func:`crsbench.evaluation.cell.evaluate_cell` emits
(a test pins the two together), so ``crsbench status`` can count what is done and a resumed
run can skip whole cells whose records are all committed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from crsbench.config import BenchmarkConfig
from crsbench.evaluation.identity import CellIdentity, RunIdentity
from crsbench.store.run_result import RunResult
from crsbench.store.stored_plan import PlannedCell, StoredPlan


@dataclass(frozen=True)
class CellPlan:
    """One (encoder, dataset) cell and the identities of every record it will write."""

    encoder: str
    dataset: str
    shift_targets: tuple[str, ...]
    conditions: tuple[tuple[str, int], ...]
    identities: tuple[RunIdentity, ...]

    @property
    def n_extractions(self) -> int:
        """Feature sets this cell needs: clean per layer, one per condition, one per shift
        target."""
        return 1 + len(self.conditions) + len(self.shift_targets)


@dataclass(frozen=True)
class CellOutcome:
    """The run results of one cell, how long its two stages took, the precision decision of
    its features (:class:`~crsbench.features.precision.PrecisionDecision` as a dict) and its
    quarantined images (see :attr:`crsbench.evaluation.cell.CellData.quarantined`)."""

    plan: CellPlan
    results: tuple[RunResult, ...]
    encoder_revision: str
    extract_s: float
    evaluate_s: float
    precision: dict[str, Any] = field(default_factory=dict)
    quarantined: tuple[Mapping[str, str], ...] = ()


def cell_conditions(cfg: BenchmarkConfig, modality: str) -> tuple[tuple[str, int], ...]:
    """The (perturbation, severity) conditions a dataset of ``modality`` is evaluated on:
    the named paper perturbations, the shipped extra (``include_extra``), then the named
    perturbations defined outside crsbench that apply to ``modality``."""
    from crsbench.perturb import EXTRA_PERTURBATIONS, conditions, named_conditions

    spec = cfg.perturbations
    out = []
    for name, sev in conditions(modality, include_extra=spec.include_extra):
        if sev not in spec.severities:
            continue
        if name in spec.names or name in EXTRA_PERTURBATIONS:
            out.append((name, sev))
    return tuple(out) + named_conditions(spec.names, modality, spec.severities)


def cell_identities(
    cfg: BenchmarkConfig,
    cell: CellIdentity,
    conds: Sequence[tuple[str, int]],
    shift_targets: Sequence[str],
    control_fractions: Sequence[float],
) -> Iterator[RunIdentity]:
    """Every run identity of one cell, in the order the cell evaluator emits them."""

    def shifted(seed: int, probe: str, rec: str = "none") -> Iterator[RunIdentity]:
        for target in shift_targets:
            yield cell.shift(seed, probe, target, rec)

    for seed in cfg.seeds:
        for f in cfg.fractions:
            yield cell.run(seed, fraction=f)
            if f != 1.0:
                continue
            for name, sev in conds:
                yield cell.run(seed, condition=name, severity=sev)
            yield from shifted(seed, "logistic")
            for rec in cfg.recalibrators:
                yield cell.run(seed, recalibrator=rec)
                yield from shifted(seed, "logistic", rec)
    for depth in cfg.layers:
        if depth == 1.0:
            continue
        for seed in cfg.seeds:
            yield cell.run(seed, layer=depth)
    for probe in ("knn", "mlp"):
        if getattr(cfg.probes, probe) is None:
            continue
        for seed in cfg.seeds:
            for f in control_fractions:
                yield cell.run(seed, probe=probe, fraction=f)
                if f != 1.0:
                    continue
                for name, sev in conds:
                    yield cell.run(seed, probe=probe, condition=name, severity=sev)
                yield from shifted(seed, probe)


def control_fractions(cfg: BenchmarkConfig) -> tuple[float, ...]:
    """Label fractions the control probes are fitted at (all of the config's fractions)."""
    return tuple(cfg.fractions)


def plan_cells(cfg: BenchmarkConfig, modalities: dict[str, str]) -> list[CellPlan]:
    """Every cell of the grid with its planned record identities (``exclude_cells`` left out).

    Parameters
    ----------
    cfg : BenchmarkConfig
    modalities : mapping dataset name → modality (from the dataset cards)
    """
    cells = []
    for enc, ds in cfg.frozen_cells:
        conds = cell_conditions(cfg, modalities[ds])
        targets = shift_targets_of(cfg, ds)
        cell = CellIdentity(enc, ds)
        ids = tuple(cell_identities(cfg, cell, conds, targets, control_fractions(cfg)))
        cells.append(CellPlan(enc, ds, targets, conds, ids))
    return cells


def shift_targets_of(cfg: BenchmarkConfig, source: str) -> tuple[str, ...]:
    """The shift targets of probe dataset ``source``, in the config's order."""
    return tuple(s.target for s in cfg.shifts if s.source == source)


def recorded_plan(cfg: BenchmarkConfig, modalities: dict[str, str]) -> StoredPlan:
    """What the store records of :func:`plan_cells`: per frozen cell its seeds, label
    fractions, conditions and shift targets (:mod:`crsbench.store.stored_plan`).

    Scoring reads it to know what each cell must hold, whatever the store holds.

    Parameters
    ----------
    cfg : BenchmarkConfig
        The whole config (before ``--skip-missing`` drops anything: a skipped cell is
        planned, not run).
    modalities : mapping dataset name → modality (from the dataset cards)

    Returns
    -------
    StoredPlan
        One :class:`~crsbench.store.stored_plan.PlannedCell` per frozen cell, by (encoder, dataset).
    """
    return StoredPlan.ordered(
        PlannedCell(c.encoder, c.dataset, tuple(int(s) for s in cfg.seeds),
                    tuple(float(f) for f in cfg.fractions), c.conditions, c.shift_targets)
        for c in plan_cells(cfg, modalities)
    )  # fmt: skip
