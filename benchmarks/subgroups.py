"""Subgroup gaps on planted worlds: the false-positive rate of the permutation test with
identical subgroups, its power by planted AUROC gap and test-set size, and the bias of the
plug-in and bias-corrected gap (``docs/scoring.md``, "Subgroups: when is a difference real").

Run: ``PYTHONPATH=src python benchmarks/subgroups.py [--worlds 1000] [--power-worlds 200]
[--power-only]``.
Each world is one binary cell (:mod:`crsbench.testing.planted_subgroups`), two sex subgroups
of equal expected size, 199 label reassignments per test, 50 bootstrap replicates.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from crsbench.stats.subgroups import subgroup_analysis
from crsbench.testing.planted_subgroups import SubgroupPlant, subgroup_cell

N_PERM, N_REP = 199, 50


def _worlds(plant: SubgroupPlant, n_worlds: int, n_patients: int, seed: int) -> pd.DataFrame:
    """One row per (world, axis): p-value, plug-in and bias-corrected gap."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_worlds):
        cell = subgroup_cell(rng, n_patients, plant)
        res = subgroup_analysis({("enc", "planted"): cell}, n_replicates=N_REP,
                                n_permutations=N_PERM, seed=i)  # fmt: skip
        for r in res.worst.itertuples():
            rows.append({"world": i, "metric": r.metric, "p": r.p_value, "gap": r.gap,
                         "gap_debiased": r.gap_debiased, "lo": r.gap_lo, "hi": r.gap_hi})  # fmt: skip
    return pd.DataFrame(rows)


def _rate(x: pd.Series) -> str:
    p, n = float(x.mean()), int(x.notna().sum())
    return f"{p:.3f} ± {np.sqrt(p * (1 - p) / max(n, 1)):.3f}"


def false_positives(n_worlds: int) -> None:
    """FPR per axis with identical subgroups (gap 0), and the mean gaps."""
    d = _worlds(SubgroupPlant(), n_worlds, 240, seed=1)
    print(f"identical subgroups, 240 patients, {n_worlds} worlds: FPR (p < 0.05) ± MC s.e.")
    for m, g in d.groupby("metric"):
        g = g[g["p"].notna()]
        print(f"  {m:16s} FPR {_rate(g['p'] < 0.05)}  old rule (interval of max−min "
              f"excludes 0, here the basic interval) {_rate(g['lo'] > 0)}  "
              f"mean gap plug-in {g['gap'].mean():.4f} bias-corrected "
              f"{g['gap_debiased'].mean():.4f} (truth 0)")  # fmt: skip
    print(f"  any axis: {_rate(d.groupby('world')['p'].min() < 0.05)}")


def power(n_worlds: int) -> None:
    """Power of the AUROC gap test by planted gap and test-set size."""
    print(f"\npower (p < 0.05), AUROC gap between two equal subgroups, {n_worlds} worlds each")
    rows = []
    for n in (100, 200, 400):
        for gap in (0.05, 0.10, 0.15, 0.20):
            d = _worlds(SubgroupPlant(auroc_gap=gap), n_worlds, n, seed=int(1000 * gap) + n)
            a = d[d["metric"] == "auroc"]
            rows.append({"patients": n, "true gap": gap, "power": _rate(a["p"] < 0.05),
                         "plug-in gap": round(a["gap"].mean(), 3),
                         "bias-corrected": round(a["gap_debiased"].mean(), 3),
                         "basic interval covers": _rate((a["lo"] <= gap) & (gap <= a["hi"]))})  # fmt: skip
    print(pd.DataFrame(rows).to_string(index=False))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--worlds", type=int, default=1000)
    ap.add_argument("--power-worlds", type=int, default=200)
    ap.add_argument("--power-only", action="store_true", help="skip the false-positive table")
    args = ap.parse_args()
    t = time.time()
    if not args.power_only:
        false_positives(args.worlds)
    power(args.power_worlds)
    print(f"\n{time.time() - t:.0f} s")


if __name__ == "__main__":
    main()
