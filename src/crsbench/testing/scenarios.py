"""Scenarios of the coverage benchmark: the kinds of grids users run, as planted worlds.

A :class:`Scenario` names its datasets (:class:`DatasetSpec`: a task model, test patients,
images per patient), whether its perturbation drops are near-tied, which cells are planned
but not run, and its encoders and seeds. :func:`draw_parameters` draws one independent set
of planted parameters (encoder quality, gaps, fragility, miscalibration) for it;
:func:`draw_world` one sample of test sets and predictions from them. Each parameter draw
has its population values (:class:`crsbench.testing.planted_tasks.Population`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from crsbench.protocol import PAPER_CONDITIONS, PAPER_SHIFTS, RETENTION_FRACTIONS
from crsbench.stats.cell_predictions import CellPredictions, EvalSplit
from crsbench.testing.planted import PlantedEncoder, population_crs
from crsbench.testing.planted_tasks import Population, TaskModel, latent


@dataclass(frozen=True)
class DatasetSpec:
    """One dataset of a scenario: its labels, test patients and images per patient (1..max)."""

    name: str
    model: TaskModel
    n_patients: int
    max_images: int = 3


@dataclass(frozen=True)
class Scenario:
    """A kind of grid users run."""

    name: str
    datasets: tuple[DatasetSpec, ...]
    near_tie: bool = False
    missing: tuple[tuple[str, str], ...] = ()  # (encoder, dataset) planned but not run
    n_encoders: int = 3
    n_seeds: int = 3


BINARY = TaskModel("multilabel", (0.3,))
ISIC = TaskModel("multiclass", (0.48, 0.18, 0.13, 0.10, 0.04, 0.03, 0.02, 0.02))
APTOS = TaskModel("multiclass", (0.49, 0.10, 0.27, 0.05, 0.09), ordinal=True)
CHEXPERT = TaskModel("multilabel", (0.01, 0.02, 0.015, 0.05, 0.1, 0.15, 0.2, 0.3, 0.25, 0.08,
                                    0.04, 0.12, 0.02, 0.35))  # fmt: skip

#: The benchmark's scenarios, by name.
SCENARIOS: dict[str, Scenario] = {s.name: s for s in (
    Scenario("binary", (DatasetSpec("isic2019", BINARY, 500),)),
    Scenario("isic 8-class", (DatasetSpec("isic2019", ISIC, 600, 1),)),
    Scenario("aptos 5-class ordinal", (DatasetSpec("aptos2019", APTOS, 300, 1),)),
    Scenario("chexpert 14 labels", (DatasetSpec("chexpert", CHEXPERT, 500, 2),)),
    Scenario("near-tie aptos", (DatasetSpec("aptos2019", APTOS, 300, 1),), near_tie=True),
    Scenario("near-tie chexpert", (DatasetSpec("chexpert", CHEXPERT, 500, 2),), near_tie=True),
    Scenario("missing cell", (DatasetSpec("isic2019", BINARY, 400),
                              DatasetSpec("aptos2019", APTOS, 300, 1)),
             missing=(("e01", "aptos2019"),)),
)}  # fmt: skip


def _conditions(delta: float, frag: float, near_tie: bool, rng) -> tuple[float, ...]:
    """δ under each of the 15 conditions: graded by severity, or all within a few percent."""
    if near_tie:
        return tuple(delta * (1 - frag * rng.uniform(0.97, 1.0)) for _ in PAPER_CONDITIONS)
    return tuple(delta * (1 - frag * (1 + 0.3 * j) * s / 3) for j in range(5) for s in (1, 2, 3))


def draw_parameters(scenario: Scenario, rng: np.random.Generator):
    """One independent draw of planted parameters: ``(encoder, dataset) → PlantedEncoder``;
    encoder ``e00`` is planted best, the others follow at a drawn gap."""
    out = {}
    shifts = dict(PAPER_SHIFTS)
    base, gap = rng.uniform(1.3, 1.9), rng.uniform(0.1, 0.3)
    for e in range(scenario.n_encoders):
        quality = 1.0 - gap * e / max(scenario.n_encoders - 1, 1)
        for spec in scenario.datasets:
            delta = base * quality
            frag = rng.uniform(0.05, 0.2) * (1.2 - quality)
            conds = _conditions(delta, frag, scenario.near_tie, rng)
            fracs = tuple(delta * k for k in (0.55, 0.75, 0.85, 0.93))
            shift = None
            if spec.name in shifts:
                shift = (
                    delta * (1 - frag * 0.98)
                    if scenario.near_tie
                    else delta * (0.6 + 0.2 * quality)
                )
            out[(f"e{e:02d}", spec.name)] = PlantedEncoder(
                delta, rng.uniform(0.6, 0.9) + 0.1 * quality, rng.uniform(-0.3, 0.3),
                conds, fracs, 0.06, shift,
            )  # fmt: skip
    return out


@dataclass(frozen=True)
class Truth:
    """Population values of one parameter draw."""

    axes: pd.DataFrame  # encoder, dataset, the four axes (planned-and-run cells)
    crs: pd.Series  # aggregate CRS per complete encoder
    extras: dict[tuple[str, str], dict[str, float]]  # jpeg drop, shift ECE increase


def population_truth(scenario: Scenario, params, n_pop: int = 60_000) -> Truth:
    """Population axes and CRS of the run cells; encoders with a missing cell have no CRS."""
    from crsbench.stats.replicate_values import JPEG_DROP, SHIFT_ECE_INCREASE

    pops = {
        s.name: Population.draw(s.model, n_pop, seed=i) for i, s in enumerate(scenario.datasets)
    }
    rows, extras = [], {}
    jpeg = [i for i, (name, _) in enumerate(PAPER_CONDITIONS) if name == "jpeg"]
    for (enc, ds), p in params.items():
        if (enc, ds) in scenario.missing:
            continue
        pop = pops[ds]
        ax, drops = pop.axes(p)
        extras[(enc, ds)] = {JPEG_DROP: float(np.mean([drops[i] for i in jpeg]))}
        target = dict(PAPER_SHIFTS).get(ds)
        if target and p.shift_delta is not None:
            extras[(enc, ds)][SHIFT_ECE_INCREASE + target] = pop.ece(p.shift_delta, p) - ax["ece"]
        rows.append({"encoder": enc, "dataset": ds, **ax})
    axes = pd.DataFrame(rows)
    incomplete = {e for e, _ in scenario.missing}
    crs = population_crs(axes[~axes["encoder"].isin(incomplete)])
    return Truth(axes, crs, extras)


def _split(rng, spec: DatasetSpec, name: str | None = None):
    """Test patients with 1..max images; targets are the patient's; the patient effect u."""
    sizes = rng.integers(1, spec.max_images + 1, spec.n_patients)
    groups = np.repeat(np.arange(spec.n_patients), sizes)
    y_pat = spec.model.labels(rng, spec.n_patients)
    u = rng.standard_normal((spec.n_patients, spec.model.n_outputs))[groups]
    y = y_pat[groups]
    return EvalSplit(name or spec.name, groups.astype(str), y), u


def _cell(rng, enc, spec: DatasetSpec, p: PlantedEncoder, test, shift, n_seeds):
    model, (split, u) = spec.model, test
    sig = model.signal(split.y)
    eps = rng.standard_normal(sig.shape)

    def probs(delta: float, signal=sig, uu=u, e=eps) -> np.ndarray:
        return model.probabilities(latent(rng, delta, signal, uu, e), delta, p)

    clean = model.probabilities(p.delta * sig + np.sqrt(0.3) * u + np.sqrt(0.7) * eps, p.delta, p)
    fractions = {f: np.stack([probs(fd + p.seed_jitter * rng.standard_normal())
                              for _ in range(n_seeds)])
                 for f, fd in zip(RETENTION_FRACTIONS, p.fraction_delta, strict=True)}  # fmt: skip
    conditions = {c: probs(cd) for c, cd in zip(PAPER_CONDITIONS, p.condition_delta, strict=True)}
    shift_pred = None
    if shift is not None and p.shift_delta is not None:
        t_split, t_u = shift
        t_sig = model.signal(t_split.y)
        shift_pred = (t_split, probs(p.shift_delta, t_sig, t_u, rng.standard_normal(t_sig.shape)))
    return CellPredictions(enc, spec.name, model.task, split, tuple(range(n_seeds)), clean,
                           fractions, conditions, shift_pred)  # fmt: skip


def draw_world(scenario: Scenario, params, rng: np.random.Generator) -> list[CellPredictions]:
    """One sample of test sets (shared by every encoder) and the run cells' predictions."""
    specs = {s.name: s for s in scenario.datasets}
    tests = {name: _split(rng, s) for name, s in specs.items()}
    targets = {s: _split(rng, specs[s], t) for s, t in PAPER_SHIFTS if s in specs}
    return [_cell(rng, enc, specs[ds], p, tests[ds], targets.get(ds), scenario.n_seeds)
            for (enc, ds), p in params.items() if (enc, ds) not in scenario.missing]  # fmt: skip
