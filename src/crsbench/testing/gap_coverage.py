"""Coverage of the intervals of differences on planted truth: every CRS difference between
two encoders (``pairwise``, behind the tiers), the leader's CRS gap to the runner-up (report
section 4) and the at-a-glance table's leader-vs-runner-up gaps per question (docs/scoring.md, "Every
printed interval").

Each world is drawn from one planted parameter set (:mod:`crsbench.testing.planted`); the
test-patient × seed bootstrap's 95 % intervals are compared with the population differences.
The leader and runner-up are chosen by the point estimates, so those two gaps are measured as
the report shows them: conditional on who was picked.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from crsbench.protocol import PAPER_SHIFTS
from crsbench.scoring import crs_table
from crsbench.scoring.anchors import AXES
from crsbench.stats.at_a_glance import at_a_glance_table, from_patient_bootstrap
from crsbench.stats.patient_bootstrap import patient_seed_bootstrap
from crsbench.testing.planted import (
    draw_world,
    planted_parameters,
    population_extras,
    population_table,
)

#: Verdict question → the population value it reads.
_AXIS_OF = {"discrimination": "auroc", "calibration": "ece", "label_efficiency": "retention",
            "robustness": "robustness_drop", "pick": "CRS"}  # fmt: skip


def _truths(params, population: pd.DataFrame) -> dict[tuple[str, str, str], float]:
    """(encoder, group, question) → population value (CRS of a cell, an axis, the JPEG drop
    and the shift ECE increase) as the at-a-glance table keys them."""
    cells = crs_table(population[["encoder", "dataset", *AXES]])
    out = {}
    for r in cells.itertuples():
        for q, col in _AXIS_OF.items():
            out[(r.encoder, r.dataset, q)] = float(getattr(r, col))
    targets = dict(PAPER_SHIFTS)
    for (enc, ds), p in params.items():
        for name, v in population_extras(p, targets.get(ds)).items():
            if name.startswith("jpeg"):
                out[(enc, ds, "jpeg")] = v
            else:
                out[(enc, f"{ds}→{targets[ds]}", "shift_calibration")] = v
    return out


def _at_a_glance_hits(table: pd.DataFrame, truth: dict, w: int) -> list[dict]:
    rows = []
    for r in table.itertuples():
        if r.runner_up is None or pd.isna(r.runner_up):
            continue
        sign = 1.0 if r.higher_is_better else -1.0
        true_gap = sign * (truth[(r.leader, r.dataset, r.question)]
                           - truth[(r.runner_up, r.dataset, r.question)])  # fmt: skip
        rows.append({"world": w, "target": f"at-a-glance gap: {r.question}",
                     "kind": r.gap_interval_kind,
                     "covered": bool(r.gap_ci_low <= true_gap <= r.gap_ci_high)})  # fmt: skip
    return rows


def run_gap_coverage(
    n_worlds: int,
    n_encoders: int = 4,
    datasets: tuple[str, ...] = ("isic2019", "chexpert"),
    n_patients: int = 300,
    n_seeds: int = 2,
    n_replicates: int = 300,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per (world, interval): ``target``, ``kind`` (what the report calls it) and
    ``covered``."""
    from crsbench.testing import simulate_runs

    rng = np.random.default_rng(seed)
    params = planted_parameters(n_encoders, datasets, rng)
    population = population_table(params)
    truth = _truths(params, population)
    runs = simulate_runs(n_encoders=2, datasets=datasets, seeds=n_seeds)  # seeds only
    hits: list[dict] = []
    for w in range(n_worlds):
        world = draw_world(params, n_patients, n_seeds, rng, population)
        res = patient_seed_bootstrap(world.cells, n_replicates=n_replicates, seed=w)
        pop = world.population_crs
        for r in res.pairwise.itertuples():
            true = pop[r.encoder_a] - pop[r.encoder_b]
            hits.append({"world": w, "target": "CRS difference (every pair)", "kind": "95% CI",
                         "covered": bool(r.ci_low <= true <= r.ci_high)})  # fmt: skip
        lead, second = res.ranks["encoder"].iloc[0], res.ranks["encoder"].iloc[1]
        g = res.pairwise[(res.pairwise["encoder_a"] == lead)
                         & (res.pairwise["encoder_b"] == second)].iloc[0]  # fmt: skip
        true = pop[lead] - pop[second]
        hits.append({"world": w, "target": "leader's CRS gap (section 4)", "kind": "95% CI",
                     "covered": bool(g["ci_low"] <= true <= g["ci_high"])})  # fmt: skip
        table = at_a_glance_table(runs, from_patient_bootstrap(res))
        hits += _at_a_glance_hits(table, truth, w)
    return pd.DataFrame(hits)


def summarise(hits: pd.DataFrame) -> pd.DataFrame:
    """Coverage per target with its Monte-Carlo standard error and the number of intervals."""
    g = hits.groupby(["target", "kind"])["covered"]
    out = g.agg(coverage="mean", n="size").reset_index()
    out["se"] = np.sqrt(out["coverage"] * (1 - out["coverage"]) / out["n"])
    return out
