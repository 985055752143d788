"""One cell's resampling for the subgroup analysis: its test split and each shift target with
their bootstrap counts and subgroup labels, and the overall values computed once per cell
(:mod:`crsbench.stats.subgroups`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from crsbench.stats.cell_predictions import CellPredictions, EvalSplit
from crsbench.stats.resample import patient_index, replicate_ids, resample_counts_for
from crsbench.stats.subgroup_values import auroc_on
from crsbench.stats.weighted_metrics import ReplicateWeights

#: Age bands in years: (lower bound inclusive, upper bound exclusive, name).
AGE_BANDS: tuple[tuple[float, float, str], ...] = (
    (0.0, 40.0, "<40"),
    (40.0, 60.0, "40-59"),
    (60.0, 80.0, "60-79"),
    (80.0, float("inf"), "80+"),
)


def age_band(ages: np.ndarray) -> np.ndarray:
    """The :data:`AGE_BANDS` name of each age (str years; blank or unparseable → blank)."""
    years = pd.to_numeric(pd.Series(np.asarray(ages, dtype=str)), errors="coerce").to_numpy()
    out = np.full(len(years), "", dtype=object)
    for lo, hi, name in AGE_BANDS:
        out[(years >= lo) & (years < hi)] = name
    return out.astype(str)


def subgroup_labels(split: EvalSplit) -> dict[str, np.ndarray]:
    """Attribute → subgroup of each row of ``split`` (ages banded; blank = not recorded)."""
    out = {}
    for attr, vals in split.metadata.items():
        out["age_band" if attr == "age" else attr] = (
            age_band(vals) if attr == "age" else np.asarray(vals, dtype=str)
        )
    return out


def n_patients(split: EvalSplit, rows: np.ndarray) -> int:
    return len(np.unique(split.groups[rows]))


@dataclass(frozen=True)
class SplitResampling:
    """One split's rows with their bootstrap counts (``(B, patients)``), each row's patient
    column and the subgroup labels."""

    split: EvalSplit
    prob: np.ndarray
    counts: np.ndarray
    inverse: np.ndarray
    labels: dict[str, np.ndarray]

    def weights(self, rows: np.ndarray) -> ReplicateWeights:
        """Point (all ones) then every replicate, for ``rows``: the counts of only the
        patients ``rows`` hold (a subgroup's kernels never sum over the other patients)."""
        held, inverse = np.unique(self.inverse[rows], return_inverse=True)
        counts = np.empty((1 + self.counts.shape[0], len(held)), dtype=self.counts.dtype)
        counts[0] = 1
        np.take(self.counts, held, axis=1, out=counts[1:])
        return ReplicateWeights.of(counts, inverse)


def split_resampling(
    split: EvalSplit, prob: np.ndarray, ids: np.ndarray, seed: int
) -> SplitResampling:
    patients, inverse = patient_index(split.groups)
    # kept for every subgroup of the cell: (replicates × patients), uint8 when they fit
    counts = resample_counts_for(split.dataset, len(patients), ids, seed, narrow=True)
    return SplitResampling(split, prob, counts, inverse, subgroup_labels(split))


@dataclass(frozen=True)
class CellResampling:
    """One cell's resampling (test and each shift target) and the analysis settings."""

    cell: CellPredictions
    test: SplitResampling
    targets: list[SplitResampling]
    min_patients: int
    min_ece_patients: int
    n_permutations: int
    seed: int
    #: Each target's overall drop and the clean AUROC, computed once per cell.
    _memo: dict = field(default_factory=dict, repr=False, compare=False)

    def clean_auroc(self) -> np.ndarray:
        """``(1 + B,)`` the cell's clean AUROC on its whole test set (point, replicates)."""
        if "clean" not in self._memo:
            rows = np.arange(len(self.test.inverse))
            self._memo["clean"] = auroc_on(self.cell, self.test.split, self.cell.clean, rows,
                                           self.test.weights(rows))  # fmt: skip
        return self._memo["clean"]

    def overall_drop(self, t: SplitResampling) -> np.ndarray:
        """``(1 + B,)`` the cell's clean AUROC minus its AUROC on target ``t``."""
        key = ("drop", t.split.dataset)
        if key not in self._memo:
            rows = np.arange(len(t.inverse))
            target = auroc_on(self.cell, t.split, t.prob, rows, t.weights(rows))
            self._memo[key] = self.clean_auroc() - target
        return self._memo[key]


def cell_resampling(
    cell: CellPredictions, n_rep: int, seed: int, sizes: tuple[int, int, int]
) -> CellResampling:
    ids = replicate_ids(n_rep)
    test = split_resampling(cell.test, cell.clean, ids, seed)
    targets = [split_resampling(split, prob, ids, seed) for split, prob in cell.shifts]
    return CellResampling(cell, test, targets, *sizes, seed)


def own_rows(ctx: CellResampling, t: SplitResampling, attr: str, value: str) -> np.ndarray | None:
    """Rows of the subgroup on target ``t`` when it has at least the minimum of patients."""
    lab = t.labels.get(attr)
    rows = np.flatnonzero(lab == value) if lab is not None else np.array([], dtype=int)
    return rows if n_patients(t.split, rows) >= ctx.min_patients else None
