"""Planted-truth worlds: per-sample predictions whose population axes and CRS are known.

For each simulated encoder and dataset the clean test scores are binormal with patient
clustering: ``z = δ·y + √ρ·u_patient + √(1−ρ)·ε`` (unit variance given y), so the population
AUROC is ``Φ(δ/√2)``. Probabilities are miscalibrated on purpose, ``p = σ(T·ℓ(z) + β)`` with
``ℓ`` the true log-odds, so the population ECE is known (from a very large sample). Each
robustness condition lowers δ to a planted value, each label fraction too (with a per-seed
jitter), and the shift target has its own patients and δ. Population retention, drop, R and
CRS follow from those values through the fixed anchors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import expit
from scipy.stats import norm

from crsbench.metrics import expected_calibration_error
from crsbench.protocol import JPEG, PAPER_CONDITIONS, PAPER_SHIFTS, RETENTION_FRACTIONS
from crsbench.scoring.anchors import AXES, load_anchors
from crsbench.stats.cell_predictions import CellPredictions, EvalSplit
from crsbench.stats.replicate_values import JPEG_DROP, SHIFT_ECE_INCREASE

PREVALENCE = 0.3
RHO = 0.3  # share of score variance shared by a patient's images


@dataclass(frozen=True)
class PlantedEncoder:
    """Population parameters of one encoder on one dataset."""

    delta: float  # clean separation (AUROC = Φ(δ/√2))
    temperature: float
    bias: float
    condition_delta: tuple[float, ...]  # one per robustness condition
    fraction_delta: tuple[float, ...]  # one per label fraction < 1
    seed_jitter: float  # sd of δ across seeds at fractions < 1
    shift_delta: float | None = None


def auroc_of(delta: float) -> float:
    """Population AUROC of unit-variance binormal scores separated by ``delta``."""
    return float(norm.cdf(delta / np.sqrt(2.0)))


def _log_odds(z: np.ndarray, delta: float) -> np.ndarray:
    return np.log(PREVALENCE / (1 - PREVALENCE)) + delta * z - delta**2 / 2


def _probabilities(z, delta, p: PlantedEncoder) -> np.ndarray:
    return expit(p.temperature * _log_odds(z, delta) + p.bias)


def population_ece(delta: float, p: PlantedEncoder, n: int = 2_000_000, seed: int = 0) -> float:
    """ECE of the planted probabilities on a very large independent sample."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < PREVALENCE).astype(float)
    z = delta * y + rng.standard_normal(n)
    return float(expected_calibration_error(y[:, None], _probabilities(z, delta, p)[:, None],
                                            "multilabel"))  # fmt: skip


def population_axes(p: PlantedEncoder, n_quad: int = 4001) -> dict[str, float]:
    """The four population axes of one planted cell (seeds integrated out exactly)."""
    d = auroc_of(p.delta)
    grid = norm.ppf((np.arange(n_quad) + 0.5) / n_quad)  # quadrature over the seed jitter
    ret = np.mean([np.mean(norm.cdf((f + p.seed_jitter * grid) / np.sqrt(2))) / d
                   for f in p.fraction_delta])  # fmt: skip
    drops = [d - auroc_of(c) for c in p.condition_delta]
    if p.shift_delta is not None:
        drops.append(d - auroc_of(p.shift_delta))
    r = 0.5 * np.mean(drops) + 0.5 * np.max(drops)
    return {"auroc": d, "ece": population_ece(p.delta, p), "retention": float(ret),
            "robustness_drop": float(r)}  # fmt: skip


def population_extras(p: PlantedEncoder, target: str | None = None) -> dict[str, float]:
    """The verdict's other population values of one planted cell, keyed as the test-patient
    bootstrap keys them: the mean AUROC drop over the JPEG severities and, with a shift
    ``target``, the ECE increase on it."""
    d = auroc_of(p.delta)
    jpeg = [d - auroc_of(c) for (name, _), c in zip(PAPER_CONDITIONS, p.condition_delta,
                                                       strict=True) if name == JPEG]  # fmt: skip
    out = {JPEG_DROP: float(np.mean(jpeg))}
    if target is not None and p.shift_delta is not None:
        out[SHIFT_ECE_INCREASE + target] = population_ece(p.shift_delta, p) - population_ece(
            p.delta, p
        )
    return out


def _split(rng, dataset: str, n_patients: int) -> tuple[EvalSplit, np.ndarray]:
    """Patients with 1–3 images each; the label is the patient's; returns the split and u."""
    sizes = rng.integers(1, 4, n_patients)
    groups = np.repeat(np.arange(n_patients), sizes)
    y_pat = (rng.random(n_patients) < PREVALENCE).astype(float)
    u = rng.standard_normal(n_patients)[groups]
    return EvalSplit(dataset, groups.astype(str), y_pat[groups][:, None]), u


def _scores(rng, delta, y, u, eps) -> np.ndarray:
    noise = np.sqrt(1 - RHO) * (0.8 * eps + 0.6 * rng.standard_normal(len(eps)))
    return delta * y + np.sqrt(RHO) * u + noise


def simulate_cell(
    rng: np.random.Generator,
    encoder: str,
    dataset: str,
    p: PlantedEncoder,
    split: EvalSplit,
    u: np.ndarray,
    n_seeds: int,
    shift: tuple[EvalSplit, np.ndarray] | None = None,
) -> CellPredictions:
    """One cell's predictions drawn from the planted parameters on the given test split."""
    y = split.y[:, 0]
    eps = rng.standard_normal(len(y))

    def probs(delta: float) -> np.ndarray:
        return _probabilities(_scores(rng, delta, y, u, eps), delta, p)[:, None]

    clean = _probabilities(p.delta * y + np.sqrt(RHO) * u + np.sqrt(1 - RHO) * eps, p.delta, p)
    fractions = {
        f: np.stack([probs(fd + p.seed_jitter * rng.standard_normal()) for _ in range(n_seeds)])
        for f, fd in zip(RETENTION_FRACTIONS, p.fraction_delta, strict=True)
    }
    conditions = {c: probs(cd) for c, cd in zip(PAPER_CONDITIONS, p.condition_delta, strict=True)}
    shift_pred = None
    if shift is not None and p.shift_delta is not None:
        t_split, t_u = shift
        t_y = t_split.y[:, 0]
        z = _scores(rng, p.shift_delta, t_y, t_u, rng.standard_normal(len(t_y)))
        shift_pred = (t_split, _probabilities(z, p.shift_delta, p)[:, None])
    return CellPredictions(encoder, dataset, "multilabel", split, tuple(range(n_seeds)),
                           clean[:, None], fractions, conditions, shift_pred)  # fmt: skip


@dataclass(frozen=True)
class World:
    """A planted world: its parameters, population axes/CRS and one sample of predictions."""

    params: dict[tuple[str, str], PlantedEncoder]
    population: pd.DataFrame  # encoder, dataset, the four axes
    population_crs: pd.Series  # aggregate CRS per encoder
    cells: list[CellPredictions]


def planted_parameters(
    n_encoders: int, datasets: tuple[str, ...], rng: np.random.Generator
) -> dict[tuple[str, str], PlantedEncoder]:
    """Encoders of graded quality (encoder ``e00`` is planted best) with varied calibration."""
    out = {}
    shift_sources = dict(PAPER_SHIFTS)
    for e in range(n_encoders):
        quality = 1.0 - 0.25 * e / max(n_encoders - 1, 1)
        for ds in datasets:
            delta = 1.3 * quality + 0.3
            frag = rng.uniform(0.05, 0.2) * (1.2 - quality)
            conds = tuple(delta * (1 - frag * (1 + 0.3 * j) * s / 3)
                          for j in range(5) for s in (1, 2, 3))  # fmt: skip
            fracs = tuple(delta * k for k in (0.55, 0.75, 0.85, 0.93))
            shift = delta * (0.5 + 0.2 * quality) if ds in shift_sources else None
            out[(f"e{e:02d}", ds)] = PlantedEncoder(
                delta, rng.uniform(0.6, 0.9) + 0.1 * quality, rng.uniform(-0.3, 0.3),
                conds, fracs, 0.06, shift,
            )  # fmt: skip
    return out


def population_table(params: dict[tuple[str, str], PlantedEncoder]) -> pd.DataFrame:
    """Population axes of every planted cell."""
    rows = [{"encoder": e, "dataset": d, **population_axes(p)} for (e, d), p in params.items()]
    return pd.DataFrame(rows)


def population_crs(population: pd.DataFrame, anchors=None) -> pd.Series:
    """Aggregate CRS per encoder of the population axes (fixed anchors)."""
    from crsbench.scoring import crs_table

    scored = crs_table(population[["encoder", "dataset", *AXES]], load_anchors(anchors))
    return scored.groupby("encoder", sort=True)["CRS"].mean()


def draw_world(
    params: dict[tuple[str, str], PlantedEncoder],
    n_patients: int,
    n_seeds: int,
    rng: np.random.Generator,
    population: pd.DataFrame | None = None,
) -> World:
    """One sample of test sets (shared by every encoder, as in the benchmark) and predictions."""
    datasets = sorted({d for _, d in params})
    splits = {d: _split(rng, d, n_patients) for d in datasets}
    targets = {t: _split(rng, t, n_patients) for s, t in PAPER_SHIFTS if s in splits}
    cells = []
    for (enc, ds), p in params.items():
        split, u = splits[ds]
        shift = next((targets[t] for s, t in PAPER_SHIFTS if s == ds and t in targets), None)
        cells.append(simulate_cell(rng, enc, ds, p, split, u, n_seeds, shift))
    pop = population if population is not None else population_table(params)
    return World(params, pop, population_crs(pop), cells)
