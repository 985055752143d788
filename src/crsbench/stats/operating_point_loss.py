"""The interval of the sensitivity lost under shift (``docs/scoring.md``, "Operating points").

Each seed's threshold is the one picked on validation
(:func:`crsbench.stats.operating_points.validation_thresholds`), held fixed; the test set's
and the shift target's patients are resampled with replacement (independent streams, one per
dataset: :func:`crsbench.stats.resample.resample_counts_for`), every image of a patient moving
with it. A replicate's sensitivity is (positives called positive) / (positives) over the
resampled patients, averaged over seeds; the loss is test − target. The interval is the basic
(bias-corrected) bootstrap interval, :func:`crsbench.stats.intervals.basic_interval`, the one
behind the axes and the CRS; it is conditional on the thresholds (the validation draw is not
resampled), and it covered the population loss at those thresholds in 0.947 ± 0.005 of 2,000
planted worlds of 300 patients and 0.944 ± 0.007 of 1,000 of 100 patients
(``tests/unit/stats/test_stats_operating_point_interval.py``).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from crsbench.stats.cell_predictions import CellPredictions, EvalSplit, once_each, seed_slices
from crsbench.stats.intervals import basic_interval
from crsbench.stats.operating_points import (
    DEFAULT_TARGET_SENSITIVITY,
    eval_sets,
    output_names,
    validation_thresholds,
)
from crsbench.stats.resample import patient_index, replicate_ids, resample_counts_for

_CHUNK = 1_000


def _patient_sums(split: EvalSplit, prob: np.ndarray, thr: np.ndarray, task: str):
    """``(P, K)`` positives and positives called positive (score ≥ threshold) per patient."""
    _, inverse = patient_index(split.groups)
    n_pat, n_lab = int(inverse.max()) + 1 if len(inverse) else 0, prob.shape[-1]
    pos, hit = np.zeros((n_pat, n_lab)), np.zeros((n_pat, n_lab))
    for j in range(n_lab):
        y = np.asarray(split.y) == j if task == "multiclass" else np.asarray(split.y)[:, j] == 1
        with np.errstate(invalid="ignore"):
            called = prob[:, j] >= thr[j]
        pos[:, j] = np.bincount(inverse[y], minlength=n_pat)
        hit[:, j] = np.bincount(inverse[y & called], minlength=n_pat)
    return pos, hit


#: Integers up to this are exact in float32: the matrix products run in float32 (half the
#: memory and time of float64) when every sum they form is below it.
_FLOAT32_EXACT = 2**24


def _sensitivities(counts: np.ndarray, sums: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """``(B, K)`` sensitivity of each replicate from its patient ``counts`` and one seed's
    per-patient (positives, positives called positive), both in ``counts``' type: integer
    sums, exact in it (float32 only below :data:`_FLOAT32_EXACT`), divided in float64."""
    hits = (counts @ sums[1].astype(counts.dtype, copy=False)).astype(np.float64)
    return hits / (counts @ sums[0].astype(counts.dtype, copy=False)).astype(np.float64)


@dataclass(frozen=True)
class _SetSums:
    """One evaluation set of a cell: its dataset and patients (the resampling stream), each
    distinct seed's per-patient (positives, positives called positive), and which of them
    each seed reads."""

    dataset: str
    n_patients: int
    sums: list[tuple[np.ndarray, np.ndarray]]
    per_seed: list[int]

    @classmethod
    def of(cls, cell: CellPredictions, split: EvalSplit, prob: np.ndarray, thr: np.ndarray):
        slices = seed_slices(prob, len(cell.seeds))
        found = once_each(lambda p, t: _patient_sums(split, p, t, cell.task),
                          [(p, thr[s]) for s, p in enumerate(slices)])  # fmt: skip
        distinct: list[tuple[np.ndarray, np.ndarray]] = []
        per_seed = []
        for f in found:
            if not any(f is d for d in distinct):
                distinct.append(f)
            per_seed.append(next(i for i, d in enumerate(distinct) if d is f))
        return cls(split.dataset, distinct[0][0].shape[0], distinct, per_seed)

    @property
    def most_positives(self) -> int:
        """The most positives of a label in any seed's sums (bounds the replicates' sums)."""
        return int(max(pos.sum(axis=0).max(initial=0) for pos, _ in self.sums))

    def point(self) -> np.ndarray:
        """Seed-mean sensitivity per label as drawn ``(K,)``."""
        with np.errstate(invalid="ignore", divide="ignore"):  # a label without positives: NaN
            return np.mean([self.sums[i][1].sum(0) / self.sums[i][0].sum(0)
                            for i in self.per_seed], axis=0)  # fmt: skip

    def replicates(self, counts: np.ndarray) -> np.ndarray:
        """Seed-mean sensitivity per label in each replicate of ``counts`` ``(B, K)``."""
        with np.errstate(invalid="ignore", divide="ignore"):
            distinct = [_sensitivities(counts, s) for s in self.sums]
            return np.mean([distinct[i] for i in self.per_seed], axis=0)


def _replicates(sets: list[_SetSums], ids: np.ndarray, seed: int) -> list[np.ndarray]:
    """``(B, K)`` replicate sensitivities of every set; each dataset's resample counts are
    drawn once per chunk of replicates and read by every cell's set of that dataset (they
    are the same for every encoder: paired)."""
    out: list[list[np.ndarray]] = [[] for _ in sets]
    streams = sorted({(s.dataset, s.n_patients) for s in sets})
    for dataset, n_pat in streams:
        members = [i for i, s in enumerate(sets) if (s.dataset, s.n_patients) == (dataset, n_pat)]
        positives = max(sets[i].most_positives for i in members)
        for start in range(0, len(ids), _CHUNK):
            counts = resample_counts_for(dataset, n_pat, ids[start : start + _CHUNK], seed,
                                         narrow=True)  # fmt: skip
            # every product sums counts × a patient's positives: at most top × positives
            most = positives * int(counts.max(initial=0))
            counts = counts.astype(np.float32 if most < _FLOAT32_EXACT else np.float64)
            for i in members:
                out[i].append(sets[i].replicates(counts))
    return [np.concatenate(parts) for parts in out]


def sensitivity_loss_intervals(
    cells: Mapping[tuple[str, str], CellPredictions],
    *,
    target_sensitivity: float = DEFAULT_TARGET_SENSITIVITY,
    n_replicates: int = 2_000,
    seed: int = 0,
    level: float = 0.95,
) -> pd.DataFrame:
    """The basic bootstrap interval of each label's sensitivity lost (test − shift target)
    at the validation-picked sensitivity operating point.

    Parameters
    ----------
    cells : mapping (encoder, dataset) → CellPredictions
        With validation predictions and shift targets (others are skipped).
    target_sensitivity : float
        The operating point picked on validation.
    n_replicates, seed, level
        Bootstrap replicates, the resampling seed and the interval's level.

    Returns
    -------
    pandas.DataFrame
        One row per (encoder, dataset, shift_target, label): ``sensitivity_lost`` (as drawn),
        ``lost_ci_low``, ``lost_ci_high``.
    """
    ids = replicate_ids(n_replicates)
    sets: list[_SetSums] = []
    plans = []  # (encoder, dataset, label names, eval set names, index of its first set)
    for cell in cells.values():
        cell = cell.widened()  # one cell at a time: only its per-patient sums are kept
        evals = eval_sets(cell)
        if cell.val is None or len(evals) < 2:
            continue
        thr = validation_thresholds(cell, "sensitivity", target_sensitivity)
        plans.append((cell.encoder, cell.dataset, output_names(cell.label_names, thr.shape[-1]),
                      [where for where, _, _ in evals], len(sets)))  # fmt: skip
        sets += [_SetSums.of(cell, split, prob, thr) for _, split, prob in evals]
    reps = _replicates(sets, ids, seed)
    rows = []
    for encoder, dataset, names, wheres, first in plans:
        t_point, t_reps = sets[first].point(), reps[first]
        for k, where in enumerate(wheres[1:], start=first + 1):
            s_point, s_reps = sets[k].point(), reps[k]
            with warnings.catch_warnings():  # a label without positives: NaN, by design
                warnings.simplefilter("ignore", RuntimeWarning)
                lo, hi = basic_interval(t_point - s_point, t_reps - s_reps, level)
            for j, name in enumerate(names):
                rows.append({"encoder": encoder, "dataset": dataset,
                             "shift_target": where, "label": name,
                             "sensitivity_lost": t_point[j] - s_point[j],
                             "lost_ci_low": lo[j], "lost_ci_high": hi[j]})  # fmt: skip
    return pd.DataFrame(rows)


def operating_point_tables(
    cells: Mapping[tuple[str, str], CellPredictions], n_replicates: int = 2_000, seed: int = 0
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``operating_point_transfer.csv`` and ``operating_points.csv`` as ``analyze`` and the
    report write them: the transfer table, and the sensitivity lost per label with its 95 %
    CI, the positives and the status under the versioned settings (both empty when no cell
    has validation predictions; the second when none has a shift target)."""
    from crsbench.stats.operating_points import operating_point_transfer, sensitivity_lost

    table = operating_point_transfer(cells)
    if table.empty:
        return table, pd.DataFrame()
    ci = sensitivity_loss_intervals(cells, n_replicates=n_replicates, seed=seed)
    return table, sensitivity_lost(table, intervals=ci)


def kept_by_encoder(lost: pd.DataFrame) -> dict[str, list[str]]:
    """The encoders that keep their operating point on every target (among the labels with
    enough positives), those that lose it somewhere, and those no label could decide."""
    out: dict[str, list[str]] = {"keep": [], "lose": [], "undecided": []}
    for enc, col in lost.groupby("encoder", sort=True)["keeps_operating_point"]:
        known = col.dropna()
        out["undecided" if known.empty else "keep" if known.all() else "lose"].append(str(enc))
    return out
