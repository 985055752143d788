"""Planted-truth predictions for every task users run: binary, multi-class (nominal or
ordinal) and multi-label with rare labels.

Each output has a latent score ``z = δ·m(y) + √ρ·u_patient + √(1−ρ)·ε`` (unit variance given
y): for a multi-label task ``m(y) = y`` per label (binormal, independent labels); for a
multi-class task ``m(y)`` is row ``y`` of a class-mean matrix (the identity for nominal
classes; ``exp(−|j − y|)`` for ordinal ones, so neighbouring grades are confused). The true
posterior follows from the Gaussian likelihood; the planted probabilities miscalibrate it,
``σ(T·logit + b)`` per label or ``softmax(T·logit + b_k)``. Population AUROC is exact for
a label (``Φ(δ/√2)``) and estimated on a large common-random-number sample for classes (the
same noise for every δ, so drops are precise); population ECE on a large sample.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit, softmax

from crsbench.metrics import expected_calibration_error, macro_auroc
from crsbench.testing.planted import RHO, PlantedEncoder, auroc_of

#: Gauss–Hermite (probabilists') nodes and weights over the seed jitter at label fractions.
_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(3)
_GH_W = _GH_W / _GH_W.sum()


@dataclass(frozen=True)
class TaskModel:
    """What a dataset's labels look like.

    Attributes
    ----------
    task : {"multilabel", "multiclass"}
        A binary dataset is one label of a multi-label task (as the store records it).
    prevalence : tuple of float
        Per label (multi-label), or the class probabilities (multi-class).
    ordinal : bool
        Multi-class only: neighbouring classes share signal.
    """

    task: str
    prevalence: tuple[float, ...]
    ordinal: bool = False

    @property
    def n_outputs(self) -> int:
        """Labels or classes."""
        return len(self.prevalence)

    def means(self) -> np.ndarray:
        """``(K, K)`` class-mean directions of a multi-class task."""
        k = np.arange(self.n_outputs)
        dist = np.abs(k[:, None] - k[None, :])
        return np.exp(-dist.astype(float)) if self.ordinal else np.eye(self.n_outputs)

    def labels(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` targets: an ``(n, L)`` 0/1 matrix or ``(n,)`` class indices."""
        pi = np.asarray(self.prevalence)
        if self.task == "multilabel":
            return (rng.random((n, len(pi))) < pi).astype(float)
        return rng.choice(len(pi), size=n, p=pi / pi.sum())

    def signal(self, y: np.ndarray) -> np.ndarray:
        """``(n, K)`` mean direction of each row's latent score."""
        return y if self.task == "multilabel" else self.means()[y]

    def probabilities(self, z: np.ndarray, delta: float, p: PlantedEncoder) -> np.ndarray:
        """The planted (miscalibrated) probabilities of latent scores ``z`` at separation δ."""
        pi = np.asarray(self.prevalence)
        if self.task == "multilabel":
            logit = np.log(pi / (1 - pi)) + delta * z - delta**2 / 2
            return expit(p.temperature * logit + p.bias)
        m = self.means()
        logit = np.log(pi / pi.sum()) + delta * z @ m.T - delta**2 * (m**2).sum(axis=1) / 2
        shift = p.bias * np.linspace(-1.0, 1.0, self.n_outputs)
        return softmax(p.temperature * logit + shift, axis=1)


def latent(rng, delta: float, signal: np.ndarray, u: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """Scores of rows sharing the clean rows' patient effect ``u`` and part of their noise."""
    noise = np.sqrt(1 - RHO) * (0.8 * eps + 0.6 * rng.standard_normal(eps.shape))
    return delta * signal + np.sqrt(RHO) * u + noise


@dataclass(frozen=True)
class Population:
    """A large common-random-number sample that gives a cell's population values."""

    model: TaskModel
    y: np.ndarray
    noise: np.ndarray

    @classmethod
    def draw(cls, model: TaskModel, n: int, seed: int = 0) -> Population:
        """``n`` rows of targets and unit-variance noise."""
        rng = np.random.default_rng(seed)
        y = model.labels(rng, n)
        return cls(model, y, rng.standard_normal((n, model.n_outputs)))

    def probs(self, delta: float, p: PlantedEncoder) -> np.ndarray:
        return self.model.probabilities(delta * self.model.signal(self.y) + self.noise, delta, p)

    def auroc(self, delta: float, p: PlantedEncoder) -> float:
        """Population macro AUROC at separation δ (exact per label for multi-label)."""
        if self.model.task == "multilabel":
            return auroc_of(delta)
        return float(macro_auroc(self.y, self.probs(delta, p), "multiclass"))

    def ece(self, delta: float, p: PlantedEncoder) -> float:
        """Population ECE (the protocol's) at separation δ."""
        return float(expected_calibration_error(self.y, self.probs(delta, p), self.model.task))

    def axes(self, p: PlantedEncoder) -> tuple[dict[str, float], list[float]]:
        """The four population axes of one planted cell, and its drops (the paper conditions'
        in order, then the shift's); seeds integrated out over the jitter by Gauss–Hermite
        quadrature."""
        d = self.auroc(p.delta, p)
        ret = np.mean([sum(w * self.auroc(f + p.seed_jitter * x, p)
                           for x, w in zip(_GH_X, _GH_W, strict=True)) / d
                       for f in p.fraction_delta])  # fmt: skip
        drops = [d - self.auroc(c, p) for c in p.condition_delta]
        if p.shift_delta is not None:
            drops.append(d - self.auroc(p.shift_delta, p))
        r = 0.5 * np.mean(drops) + 0.5 * np.max(drops)
        axes = {"auroc": d, "ece": self.ece(p.delta, p), "retention": float(ret),
                "robustness_drop": float(r)}  # fmt: skip
        return axes, drops
