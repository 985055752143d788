"""Plan the grid: which cells, which extractions and exactly which run records a config makes.

The identities enumerated here are the ones :func:`crsbench.runs.cell.evaluate_cell` emits
(a test pins the two together), so ``crsbench status`` can count what is done and a resumed
run can skip whole cells whose records are all committed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from crsbench.config import BenchmarkConfig


@dataclass(frozen=True)
class CellPlan:
    """One (encoder, dataset) cell and the identities of every record it will write."""

    encoder: str
    dataset: str
    shift_targets: tuple[str, ...]
    conditions: tuple[tuple[str, int], ...]
    identities: tuple[dict[str, Any], ...]

    @property
    def n_extractions(self) -> int:
        """Feature sets this cell needs: clean per layer, one per condition, one per shift
        target."""
        return 1 + len(self.conditions) + len(self.shift_targets)


def cell_conditions(cfg: BenchmarkConfig, modality: str) -> tuple[tuple[str, int], ...]:
    """The (perturbation, severity) conditions a dataset of ``modality`` is evaluated on."""
    from crsbench.perturb import EXTRA_PERTURBATIONS, conditions

    spec = cfg.perturbations
    out = []
    for name, sev in conditions(modality, include_extra=spec.include_extra):
        if sev not in spec.severities:
            continue
        if name in spec.names or name in EXTRA_PERTURBATIONS:
            out.append((name, sev))
    return tuple(out)


def _identity(
    enc: str,
    ds: str,
    seed: int,
    probe: str,
    layer: float,
    fraction: float,
    condition: str = "clean",
    severity: int = 0,
    recalibrator: str = "none",
    eval_dataset: str | None = None,
) -> dict[str, Any]:
    return {
        "encoder": enc,
        "dataset": ds,
        "eval_dataset": eval_dataset or ds,
        "seed": seed,
        "regime": "frozen",
        "probe": probe,
        "layer": float(layer),
        "fraction": float(fraction),
        "condition": condition,
        "severity": severity,
        "recalibrator": recalibrator,
    }


def cell_identities(
    cfg: BenchmarkConfig,
    encoder: str,
    dataset: str,
    conds: Sequence[tuple[str, int]],
    shift_targets: Sequence[str],
    control_fractions: Sequence[float],
) -> Iterator[dict[str, Any]]:
    """Every run identity of one cell, in the order the cell evaluator emits them."""
    fr = cfg.fractions

    def shifted(seed: int, probe: str, rec: str = "none") -> Iterator[dict[str, Any]]:
        for target in shift_targets:
            yield _identity(encoder, dataset, seed, probe, 1.0, 1.0, "shift", 0, rec,
                            eval_dataset=target)  # fmt: skip

    for seed in cfg.seeds:
        for f in fr:
            yield _identity(encoder, dataset, seed, "logistic", 1.0, f)
            if f != 1.0:
                continue
            for name, sev in conds:
                yield _identity(encoder, dataset, seed, "logistic", 1.0, 1.0, name, sev)
            yield from shifted(seed, "logistic")
            for rec in cfg.recalibrators:
                yield _identity(encoder, dataset, seed, "logistic", 1.0, 1.0, recalibrator=rec)
                yield from shifted(seed, "logistic", rec)
    for depth in cfg.layers:
        if depth == 1.0:
            continue
        for seed in cfg.seeds:
            yield _identity(encoder, dataset, seed, "logistic", depth, 1.0)
    for probe in ("knn", "mlp"):
        if getattr(cfg.probes, probe) is None:
            continue
        for seed in cfg.seeds:
            for f in control_fractions:
                yield _identity(encoder, dataset, seed, probe, 1.0, f)
                if f != 1.0:
                    continue
                for name, sev in conds:
                    yield _identity(encoder, dataset, seed, probe, 1.0, 1.0, name, sev)
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
        ids = tuple(cell_identities(cfg, enc, ds, conds, targets, control_fractions(cfg)))
        cells.append(CellPlan(enc, ds, targets, conds, ids))
    return cells


def shift_targets_of(cfg: BenchmarkConfig, source: str) -> tuple[str, ...]:
    """The shift targets of probe dataset ``source``, in the config's order."""
    return tuple(s.target for s in cfg.shifts if s.source == source)
