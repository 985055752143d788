"""Coverage of the intervals on planted-truth worlds (:mod:`crsbench.testing.planted`).

Over many worlds drawn from the same planted parameters, count how often the 95 % interval of
each encoder's CRS and of each cell's axis covers the population value, for the test-patient
× seed bootstrap and for the seed-only bootstrap; whether the planted leader is in tier 1; and
how P(rank 1) is calibrated. The ECE interval around the debiased estimate
(:func:`crsbench.stats.debiased_ece.debiased_ece_intervals`) is scored beside the
protocol's as the target :data:`DEBIASED_ECE`, left out of :meth:`CoverageReport.protocol_min`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from crsbench.protocol import PAPER_SHIFTS
from crsbench.scoring.anchors import AXES
from crsbench.stats.bootstrap import paired_seed_bootstrap
from crsbench.stats.debiased_ece import debiased_ece_intervals
from crsbench.stats.intervals import basic_interval
from crsbench.stats.patient_bootstrap import (
    SEED_ONLY,
    TEST_PATIENTS_X_SEEDS,
    patient_seed_bootstrap,
    per_seed_axes,
)
from crsbench.stats.replicate_values import JPEG_DROP
from crsbench.testing.planted import (
    draw_world,
    planted_parameters,
    population_extras,
    population_table,
)

#: Target name of the ECE interval centred on the debiased estimate (not the protocol's).
DEBIASED_ECE = "ece (debiased interval)"
#: Target names of the verdict's JPEG and shift-calibration values.
JPEG_TARGET = "jpeg drop"
SHIFT_ECE_TARGET = "shift ece increase"
#: The protocol's targets: CRS, the axes and the verdict's two other values.
PROTOCOL_TARGETS = ("CRS", *AXES, JPEG_TARGET, SHIFT_ECE_TARGET)


@dataclass(frozen=True)
class CoverageReport:
    """Per-world hits and the rank-1 records behind the summary figures."""

    hits: pd.DataFrame  # world, method, target (CRS or an axis), covered (bool)
    leader_in_tier1: np.ndarray  # per world
    rank1: pd.DataFrame  # world, encoder, p_rank1, is_planted_leader

    def coverage(self) -> pd.DataFrame:
        """Coverage per (method, target)."""
        return self.hits.groupby(["method", "target"])["covered"].mean().unstack("method")

    def protocol_min(self, method: str) -> float:
        """Lowest coverage of ``method`` over :data:`PROTOCOL_TARGETS` it has (CRS, the four
        axes, and for the test-patient bootstrap the JPEG drop and the shift ECE increase)."""
        cov = self.coverage()[method].reindex(PROTOCOL_TARGETS).dropna()
        return float(cov.min())

    def calibration(self, bins: tuple[float, ...] = (0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0001)):
        """Among (world, encoder) pairs with P(rank 1) in a bin, how often it is the leader."""
        cut = pd.cut(self.rank1["p_rank1"], list(bins), right=False)
        g = self.rank1.groupby(cut, observed=True)
        return pd.DataFrame({"n": g.size(), "mean_p_rank1": g["p_rank1"].mean(),
                             "leader_share": g["is_planted_leader"].mean()})  # fmt: skip


def _axis_hits(world, res, method: str, lo: np.ndarray, hi: np.ndarray, w: int) -> list[dict]:
    pop = world.population.set_index(["encoder", "dataset"])
    out = []
    for i, key in enumerate(res.cell_keys):
        for k, axis in enumerate(AXES):
            truth = pop.loc[key, axis]
            out.append({"world": w, "method": method, "target": axis,
                        "covered": bool(lo[i, k] <= truth <= hi[i, k])})  # fmt: skip
    return out


def _extra_hits(truths: dict, res, w: int, level: float) -> list[dict]:
    """The verdict's intervals of the JPEG drop (basic) and of the shift ECE increase
    (percentile) against the population's (``truths``: (encoder, dataset) →
    :func:`population_extras`)."""
    out = []
    alpha = (1 - level) / 2
    for (enc, ds, name), reps in res.extras.items():
        point = res.point_extras[(enc, ds, name)]
        if name == JPEG_DROP:
            lo, hi = (float(v[0]) for v in basic_interval(np.array([point]), reps[:, None], level))
        else:
            lo, hi = np.nanquantile(reps, alpha), np.nanquantile(reps, 1 - alpha)
        truth = truths[(enc, ds)][name]
        target = JPEG_TARGET if name == JPEG_DROP else SHIFT_ECE_TARGET
        out.append({"world": w, "method": TEST_PATIENTS_X_SEEDS, "target": target,
                    "covered": bool(lo <= truth <= hi)})  # fmt: skip
    return out


def _debiased_ece_hits(world, n_rep: int, w: int, level: float) -> list[dict]:
    pop = world.population.set_index(["encoder", "dataset"])["ece"]
    ci = debiased_ece_intervals(world.cells, n_replicates=n_rep, seed=w, level=level)
    return [{"world": w, "method": TEST_PATIENTS_X_SEEDS, "target": DEBIASED_ECE,
             "covered": bool(r.ci_low <= pop[(r.encoder, r.dataset)] <= r.ci_high)}
            for r in ci.itertuples()]  # fmt: skip


def _seed_only_axes(per_seed: pd.DataFrame, keys, n_rep: int, rng, level: float):
    """Percentile intervals of the seed-mean axes when only the seeds are resampled."""
    alpha = (1 - level) / 2
    lo, hi = np.empty((len(keys), 4)), np.empty((len(keys), 4))
    by_cell = per_seed.groupby(["encoder", "dataset"])
    for i, key in enumerate(keys):
        x = by_cell.get_group(key)[list(AXES)].to_numpy()
        idx = rng.integers(0, len(x), (n_rep, len(x)))
        means = x[idx].mean(axis=1)
        lo[i], hi[i] = np.quantile(means, alpha, axis=0), np.quantile(means, 1 - alpha, axis=0)
    return lo, hi


def run_coverage(
    n_worlds: int,
    n_encoders: int = 4,
    datasets: tuple[str, ...] = ("isic2019", "chexpert"),
    n_patients: int = 500,
    n_seeds: int = 3,
    n_replicates: int = 400,
    seed: int = 0,
    level: float = 0.95,
) -> CoverageReport:
    """Draw ``n_worlds`` worlds from one planted parameter set and score every interval."""
    rng = np.random.default_rng(seed)
    params = planted_parameters(n_encoders, datasets, rng)
    population = population_table(params)
    targets = dict(PAPER_SHIFTS)
    truths = {key: population_extras(p, targets.get(key[1])) for key, p in params.items()}
    hits: list[dict] = []
    in_tier1, rank1 = [], []
    for w in range(n_worlds):
        world = draw_world(params, n_patients, n_seeds, rng, population)
        res = patient_seed_bootstrap(world.cells, n_replicates=n_replicates, seed=w, level=level)
        seed_only = paired_seed_bootstrap(per_seed_axes(world.cells), n_replicates=n_replicates,
                                          seed=w, level=level)  # fmt: skip
        for method, r in ((TEST_PATIENTS_X_SEEDS, res), (SEED_ONLY, seed_only)):
            t = r.ranks.set_index("encoder")
            for enc, truth in world.population_crs.items():
                covered = t.loc[enc, "crs_ci_low"] <= truth <= t.loc[enc, "crs_ci_high"]
                hits.append({"world": w, "method": method, "target": "CRS",
                             "covered": bool(covered)})  # fmt: skip
        ci = res.axis_intervals(level)
        lo = ci["ci_low"].to_numpy().reshape(-1, 4)
        hi = ci["ci_high"].to_numpy().reshape(-1, 4)
        hits += _axis_hits(world, res, TEST_PATIENTS_X_SEEDS, lo, hi, w)
        so_lo, so_hi = _seed_only_axes(per_seed_axes(world.cells), res.cell_keys, n_replicates,
                                       np.random.default_rng(w), level)  # fmt: skip
        hits += _axis_hits(world, res, SEED_ONLY, so_lo, so_hi, w)
        hits += _extra_hits(truths, res, w, level)
        hits += _debiased_ece_hits(world, n_replicates, w, level)
        leader = world.population_crs.idxmax()
        t = res.ranks.set_index("encoder")
        in_tier1.append(bool(t.loc[leader, "tier"] == 1))
        for enc in t.index:
            rank1.append({"world": w, "encoder": enc, "p_rank1": t.loc[enc, "p_rank1"],
                          "is_planted_leader": enc == leader})  # fmt: skip
    return CoverageReport(pd.DataFrame(hits), np.array(in_tier1), pd.DataFrame(rank1))
