"""Coverage of the intervals on planted-truth worlds, scenario by scenario
(:mod:`crsbench.testing.scenarios`).

For each scenario, worlds are drawn from several independent parameter draws (a new draw
every ``worlds_per_draw`` worlds); each world runs the real test-patient × seed bootstrap
(:func:`crsbench.stats.patient_bootstrap.patient_seed_bootstrap`) and the seed-only one on
the cells that can be ranked (an encoder with a planned cell not run is left out by
:func:`crsbench.scoring.planned.incomplete_encoders`, as ``analyze`` leaves it out), and
records whether each printed 95 % interval covers the population value: CRS, the four axes
(R's tie-aware interval, :mod:`crsbench.stats.robustness_interval`), the leader gap (planted
leader − runner-up), the verdict's JPEG drop and shift-ECE increase; whether the planted
leader is in tier 1; P(rank 1); and the plug-in R beside its population value (the bias).
Coverage is the share of hits; its standard error treats worlds as the independent units.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from crsbench.scoring import crs_table
from crsbench.scoring.anchors import AXES
from crsbench.scoring.planned import add_unrun_cells, incomplete_encoders
from crsbench.stats.bootstrap import paired_seed_bootstrap
from crsbench.stats.cell_predictions import CellPredictions
from crsbench.stats.intervals import basic_interval, percentile_interval
from crsbench.stats.patient_bootstrap import (
    SEED_ONLY,
    TEST_PATIENTS_X_SEEDS,
    PatientBootstrapResult,
    patient_seed_bootstrap,
    per_seed_axes,
)
from crsbench.stats.replicate_values import JPEG_DROP, SHIFT_ECE_INCREASE
from crsbench.testing.coverage_candidates import (
    candidate_hits,
    ece_candidate_hits,
    gap_candidate_hits,
)
from crsbench.testing.coverage_targets import (
    INTERVAL_TARGETS,
    JPEG_TARGET,
    LEADER_GAP,
    LEADER_IN_TIER1,
    SHIFT_ECE_TARGET,
    hit,
)
from crsbench.testing.scenarios import (
    Scenario,
    Truth,
    draw_parameters,
    draw_world,
    population_truth,
)

#: Seed streams of the worlds that choose interval methods and of the reported ones.
TUNING, REPORTING = 1, 2


@dataclass(frozen=True)
class CoverageRun:
    """Per-world hits, plug-in R against its population value, and P(rank 1) records."""

    hits: pd.DataFrame  # scenario, world, method, target, covered
    r_points: pd.DataFrame  # scenario, world, r_hat, r_corrected, r_true
    rank1: pd.DataFrame  # scenario, world, encoder, p_rank1, is_planted_leader

    def coverage(self) -> pd.DataFrame:
        """Coverage, its standard error (worlds as units) and worlds per (scenario, method,
        target)."""
        per_world = self.hits.groupby(["scenario", "method", "target", "world"])["covered"].mean()
        g = per_world.groupby(["scenario", "method", "target"])
        return pd.DataFrame({"coverage": g.mean(), "se": g.std(ddof=1) / np.sqrt(g.size()),
                             "worlds": g.size()})  # fmt: skip

    def interval_min(self, method: str) -> float:
        """Lowest coverage of ``method`` over every scenario and interval target."""
        cov = self.coverage().reset_index()
        keep = (cov["method"] == method) & cov["target"].isin(INTERVAL_TARGETS)
        return float(cov.loc[keep, "coverage"].min())

    def leader_in_tier1(self) -> float:
        """Share of worlds whose planted leader is in tier 1."""
        return float(self.hits.loc[self.hits["target"] == LEADER_IN_TIER1, "covered"].mean())

    def r_bias(self) -> pd.DataFrame:
        """Per scenario: mean population R, mean bias of the plug-in R and of the
        bias-corrected one (absolute and relative to the population R), with standard errors."""
        d = self.r_points.assign(bias=lambda x: x["r_hat"] - x["r_true"],
                                 bias_corrected=lambda x: x["r_corrected"] - x["r_true"])  # fmt: skip
        w = d.groupby(["scenario", "world"])[["r_true", "bias", "bias_corrected"]].mean()
        g = w.groupby("scenario")
        out = g.mean()
        out["bias_se"] = g["bias"].std(ddof=1) / np.sqrt(g.size())
        out["relative_bias"] = out["bias"] / out["r_true"]
        out["relative_bias_corrected"] = out["bias_corrected"] / out["r_true"]
        return out

    def calibration(self, bins=(0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0001)) -> pd.DataFrame:
        """Among (world, encoder) pairs with P(rank 1) in a bin, how often it is the leader."""
        cut = pd.cut(self.rank1["p_rank1"], list(bins), right=False)
        g = self.rank1.groupby(cut, observed=True)
        return pd.DataFrame({"n": g.size(), "mean_p_rank1": g["p_rank1"].mean(),
                             "leader_share": g["is_planted_leader"].mean()})  # fmt: skip


def rankable_cells(cells: list[CellPredictions], scenario: Scenario) -> list[CellPredictions]:
    """The cells of encoders with every planned cell run, chosen by the scoring code."""
    ps = per_seed_axes(cells)
    table = crs_table(ps.groupby(["encoder", "dataset"], as_index=False)[list(AXES)].mean())
    table["missing"] = ""
    planned = {(c.encoder, c.dataset) for c in cells} | set(scenario.missing)
    out = set(incomplete_encoders(add_unrun_cells(table, planned)))
    return [c for c in cells if c.encoder not in out]


def _world_hits(name: str, w: int, res: PatientBootstrapResult, seed_only, truth: Truth,
                cells, level: float) -> list[dict]:  # fmt: skip
    out = []
    for method, r in ((TEST_PATIENTS_X_SEEDS, res), (SEED_ONLY, seed_only)):
        t = r.ranks.set_index("encoder")
        for enc, crs in truth.crs.items():
            out.append(hit(name, w, method, "CRS", t.loc[enc, "crs_ci_low"],
                            t.loc[enc, "crs_ci_high"], crs))  # fmt: skip
    pop = truth.axes.set_index(["encoder", "dataset"])
    ci = res.axis_intervals(level).set_index(["encoder", "dataset", "axis"])
    so = _seed_only_axes(per_seed_axes(cells), res.cell_keys, len(res.replicates), w, level)
    for i, key in enumerate(res.cell_keys):
        for k, axis in enumerate(AXES):
            lo, hi = ci.loc[(*key, axis), ["ci_low", "ci_high"]]
            out.append(hit(name, w, TEST_PATIENTS_X_SEEDS, axis, lo, hi, pop.loc[key, axis]))
            out.append(hit(name, w, SEED_ONLY, axis, so[0][i, k], so[1][i, k], pop.loc[key, axis]))
    first, second = truth.crs.sort_values(ascending=False).index[:2]
    pw = res.pairwise.set_index(["encoder_a", "encoder_b"]).loc[(first, second)]
    out.append(hit(name, w, TEST_PATIENTS_X_SEEDS, LEADER_GAP, pw["ci_low"], pw["ci_high"],
                    truth.crs[first] - truth.crs[second]))  # fmt: skip
    out += _extra_hits(name, w, res, truth, level)
    tier1 = res.ranks.set_index("encoder").loc[first, "tier"] == 1
    out.append({"scenario": name, "world": w, "method": TEST_PATIENTS_X_SEEDS,
                "target": LEADER_IN_TIER1, "covered": bool(tier1)})  # fmt: skip
    return out


def _extra_hits(name, w, res: PatientBootstrapResult, truth: Truth, level) -> list[dict]:
    """The verdict's JPEG drop (basic interval) and shift ECE increase (percentile)."""
    out = []
    for (enc, ds, key), reps in res.extras.items():
        if key != JPEG_DROP and not key.startswith(SHIFT_ECE_INCREASE):
            continue
        point = res.point_extras[(enc, ds, key)]
        if key == JPEG_DROP:
            lo, hi = (float(v[0]) for v in basic_interval(np.array([point]), reps[:, None], level))
        else:
            lo, hi = percentile_interval(reps, level)
        target = JPEG_TARGET if key == JPEG_DROP else SHIFT_ECE_TARGET
        out.append(
            hit(name, w, TEST_PATIENTS_X_SEEDS, target, lo, hi, truth.extras[(enc, ds)][key])
        )
    return out


def _seed_only_axes(per_seed: pd.DataFrame, keys, n_rep: int, seed: int, level: float):
    """Percentile intervals of the seed-mean axes when only the seeds are resampled."""
    rng, alpha = np.random.default_rng(seed), (1 - level) / 2
    lo, hi = np.empty((len(keys), 4)), np.empty((len(keys), 4))
    by_cell = per_seed.groupby(["encoder", "dataset"])
    for i, key in enumerate(keys):
        x = by_cell.get_group(key)[list(AXES)].to_numpy()
        means = x[rng.integers(0, len(x), (n_rep, len(x)))].mean(axis=1)
        lo[i], hi[i] = np.quantile(means, alpha, axis=0), np.quantile(means, 1 - alpha, axis=0)
    return lo, hi


def _r_rows(name, w, res: PatientBootstrapResult, truth: Truth, kappas, level):
    """Plug-in and bias-corrected R against the population's, and the tuning hits."""
    c = AXES.index("robustness_drop")
    pop = truth.axes.set_index(["encoder", "dataset"])["robustness_drop"]
    r = res.r_interval(level)
    points = [{"scenario": name, "world": w, "r_hat": res.point_axes[i, c],
               "r_corrected": res.point_axes[i, c] - r.bias[i], "r_true": pop[key]}
              for i, key in enumerate(res.cell_keys)]  # fmt: skip
    hits = []
    for kappa in kappas:
        rk = res.r_interval(level, kappa, percentile=False)
        hits += [hit(name, w, f"R, kappa={kappa:g}", "robustness_drop", rk.low[i], rk.high[i],
                      pop[key]) for i, key in enumerate(res.cell_keys)]  # fmt: skip
    return points, hits


def _candidate_kinds(which: bool | str) -> set[str]:
    """The candidate kinds named by ``which`` (checked: ``ece``, ``gap``)."""
    if which is True or which in ("all", "", False):
        return set()
    kinds = {k.strip() for k in str(which).split(",")}
    if kinds - {"ece", "gap"}:
        raise ValueError(f"candidates must be 'all' or a choice of 'ece', 'gap'. Got {which!r}.")
    return kinds


def _candidates(which: bool | str, name, w, cells, res, truth, level) -> list[dict]:
    """The candidate methods' hits: all (``True`` or ``"all"``), or a comma-separated
    choice of ``ece`` and ``gap``."""
    if not which:
        return []
    if which is True or which == "all":
        return candidate_hits(name, w, cells, res, truth, level)
    kinds = _candidate_kinds(which)
    out = ece_candidate_hits(name, w, res, truth, level) if "ece" in kinds else []
    return out + (gap_candidate_hits(name, w, res, truth, level) if "gap" in kinds else [])


def run_scenario(
    scenario: Scenario,
    n_worlds: int,
    n_replicates: int = 200,
    stream: int = REPORTING,
    worlds_per_draw: int = 100,
    kappas: tuple[float, ...] = (),
    level: float = 0.95,
    n_pop: int = 60_000,
    progress: Callable[[int], None] | None = None,
    first_world: int = 0,
    candidates: bool | str = False,
) -> CoverageRun:
    """Draw ``n_worlds`` worlds of ``scenario`` (a new parameter draw every
    ``worlds_per_draw``; seed stream :data:`TUNING` or :data:`REPORTING`) and score every
    interval; ``kappas`` adds R's coverage at each tie threshold (method ``R, kappa=…``);
    ``progress(w)`` is called after each world. Worlds ``first_world …`` are drawn (world
    ``w`` is the same in every run, so runs of disjoint ranges add up); ``candidates`` adds
    the methods compared on the tuning worlds (:func:`crsbench.testing.coverage_candidates.candidate_hits`; ``"ece"``, ``"gap"``
    or ``"ece,gap"``: C's, the leader gap's)."""
    _candidate_kinds(candidates)  # refused before any world is drawn
    hits, r_points, rank1 = [], [], []
    truth = params = None
    for w in range(first_world, first_world + n_worlds):
        if params is None or w % worlds_per_draw == 0:
            params = draw_parameters(
                scenario, np.random.default_rng([stream, w // worlds_per_draw])
            )
            truth = population_truth(scenario, params, n_pop)
        assert truth is not None  # drawn with the first world's parameters
        cells = rankable_cells(
            draw_world(scenario, params, np.random.default_rng([stream, 7, w])), scenario
        )
        res = patient_seed_bootstrap(
            cells, n_replicates=n_replicates, seed=w, level=level, n_jobs=1
        )
        seed_only = paired_seed_bootstrap(per_seed_axes(cells), n_replicates=n_replicates,
                                          seed=w, level=level)  # fmt: skip
        hits += _world_hits(scenario.name, w, res, seed_only, truth, cells, level)
        pts, more = _r_rows(scenario.name, w, res, truth, kappas, level)
        r_points += pts
        hits += more
        hits += _candidates(candidates, scenario.name, w, cells, res, truth, level)
        leader = truth.crs.idxmax()
        for enc, p in res.ranks.set_index("encoder")["p_rank1"].items():
            rank1.append({"scenario": scenario.name, "world": w, "encoder": enc,
                          "p_rank1": p, "is_planted_leader": enc == leader})  # fmt: skip
        if progress is not None:
            progress(w)
    return CoverageRun(pd.DataFrame(hits), pd.DataFrame(r_points), pd.DataFrame(rank1))


def combine(runs: list[CoverageRun]) -> CoverageRun:
    """One run of several runs (scenarios, or disjoint world ranges of one scenario)."""
    return CoverageRun(*(pd.concat([getattr(r, f) for r in runs], ignore_index=True)
                         for f in ("hits", "r_points", "rank1")))  # fmt: skip
