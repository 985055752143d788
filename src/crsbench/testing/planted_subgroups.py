"""Planted worlds for the subgroup analysis: one binary cell whose test patients fall in two
sex subgroups, with a planted AUROC gap and calibration gap between them (zero: identical
subgroups, the permutation test's null).

Scores are binormal with patient clustering as in :mod:`crsbench.testing.planted`; subgroup
``F`` has separation ``delta`` (AUROC ``Φ(δ/√2)``), subgroup ``M`` the separation that
lowers its AUROC by ``auroc_gap``; probabilities are the calibrated ``σ(ℓ)`` (``ℓ`` the true
log-odds) raised to a temperature ``temperature_m`` in subgroup ``M``. Two robustness
conditions lower the separation by 20 %, so every subgroup has an R.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit
from scipy.stats import norm

from crsbench.protocol import PAPER_CONDITIONS
from crsbench.stats.cell_predictions import CellPredictions, EvalSplit

PREVALENCE = 0.3
RHO = 0.3


@dataclass(frozen=True)
class SubgroupPlant:
    """What differs between the subgroups of a planted world.

    Attributes
    ----------
    auroc_gap : float
        Population AUROC of ``F`` minus that of ``M``.
    temperature_m : float
        Temperature of ``M``'s probabilities (1: calibrated, as ``F`` is).
    share_m : float
        Probability that a patient is in ``M``.
    delta : float
        Separation of ``F`` (AUROC ``Φ(δ/√2)`` = 0.856 at 1.5).
    """

    auroc_gap: float = 0.0
    temperature_m: float = 1.0
    share_m: float = 0.5
    delta: float = 1.5

    def delta_m(self) -> float:
        """Separation of ``M``."""
        return float(np.sqrt(2) * norm.ppf(norm.cdf(self.delta / np.sqrt(2)) - self.auroc_gap))


def _probs(z: np.ndarray, delta: np.ndarray, temperature: np.ndarray) -> np.ndarray:
    log_odds = np.log(PREVALENCE / (1 - PREVALENCE)) + delta * z - delta**2 / 2
    return expit(temperature * log_odds)[:, None]


def subgroup_cell(
    rng: np.random.Generator, n_patients: int, plant: SubgroupPlant
) -> CellPredictions:
    """One planted cell of ``n_patients`` test patients (1–3 images each) with a ``sex``
    attribute (``F``/``M``, per patient)."""
    sizes = rng.integers(1, 4, n_patients)
    groups = np.repeat(np.arange(n_patients), sizes)
    male = (rng.random(n_patients) < plant.share_m)[groups]
    y = (rng.random(n_patients) < PREVALENCE).astype(float)[groups]
    u = np.sqrt(RHO) * rng.standard_normal(n_patients)[groups]
    delta = np.where(male, plant.delta_m(), plant.delta)
    temp = np.where(male, plant.temperature_m, 1.0)

    def probs(scale: float) -> np.ndarray:
        d = delta * scale
        z = d * y + u + np.sqrt(1 - RHO) * rng.standard_normal(len(y))
        return _probs(z, d, temp)

    split = EvalSplit("planted", groups.astype(str), y[:, None],
                      metadata={"sex": np.where(male, "M", "F")})  # fmt: skip
    conditions = {c: probs(0.8) for c in PAPER_CONDITIONS[:2]}
    return CellPredictions("enc", "planted", "multilabel", split, (0,), probs(1.0),
                           conditions=conditions)  # fmt: skip
