"""Coverage of the consortium's intervals on planted consortia (``crsbench combine``).

**Summary-format worlds** (``--worlds``, default 1,000 per between-site spread): a consortium
of ``k`` sites (3–12, drawn per world), each with a true value ``theta_i ~ N(mu, tau²)`` of
every quantity (the four axes and the CRS, two encoders) and an estimate with sampling
variance ``0.3² / n_i`` for ``n_i`` test patients drawn between 100 and 2,000 (sites of
different sizes). The summaries go through the JSON format (written, parsed, checked) and are
pooled by :func:`crsbench.consortium.combine.combine`. Reported with their binomial standard
errors: how often the pooled-mean interval (Hartung–Knapp) covers ``mu`` and the prediction
interval covers a new site's true value ``mu + N(0, tau²)``, per tau, per number of sites and
overall, for REML and DL; beside them the plain normal (z) interval the module does not use.

**Profiled worlds** (``--profiled-worlds``, default 2): sites drawn from one synthetic-cohort
generator (same population: tau = 0; different sizes and seeds) go through the real path,
``crsbench profile`` (offline encoders) → ``export-summary`` → ``combine``. Their truth is not
known in closed form, so what is checked is the variance each site reports: for every pair of
sites and every poolable quantity, ``z = (y_i − y_j) / sqrt(v_i + v_j)`` should be standard
normal (share with |z| ≤ 1.96 near 0.95).

Last line: ``mean_coverage=<REML, all worlds> prediction_coverage=<…> profiled_pairs_within=<…>``.
Usage: ``python benchmarks/consortium.py [--worlds 1000] [--profiled-worlds 2]``
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import stats

TAUS = (0.01, 0.02, 0.04)
K_BANDS = ((3, 4), (5, 7), (8, 12))
#: Per-image brightness jitter of the profiled sites' cohorts (classes 70 apart): AUROC < 1.
JITTER = 60.0


def _settings():
    from crsbench.consortium.settings import load_settings

    return dataclasses.replace(load_settings(), n_site_replicates=1)


def summary_worlds(n_worlds: int, seed: int = 0) -> list[dict]:
    """One hit record per world, tau, method, encoder and quantity."""
    from crsbench.consortium.combine import combine
    from crsbench.consortium.planted import planted_consortium, round_trip

    rng, settings, hits = np.random.default_rng(seed), _settings(), []
    for tau in TAUS:
        for _ in range(n_worlds):
            k = int(rng.integers(3, 13))
            world = planted_consortium(rng, k, tau)
            sites = round_trip(world.sites)
            new_site = {key: m + rng.normal(0.0, tau) for key, m in world.mu.items()}
            for method in ("reml", "dl"):
                for row in combine(sites, settings, method).pooled:
                    p, mu = row.pooled, world.mu[(row.encoder, row.quantity)]
                    z = stats.norm.isf(0.025) * p.se
                    hits.append({"tau": tau, "k": k, "method": method,
                                 "mean": p.ci_low <= mu <= p.ci_high,
                                 "z_mean": abs(p.mean - mu) <= z,
                                 "prediction": p.pi_low <= new_site[(row.encoder, row.quantity)]
                                 <= p.pi_high})  # fmt: skip
    return hits


def _cov(rows: list[dict], key: str) -> str:
    p = float(np.mean([r[key] for r in rows]))
    return f"{p:.3f} ± {np.sqrt(p * (1 - p) / len(rows)):.3f}"


def report_summary_worlds(hits: list[dict]) -> None:
    print("summary-format worlds: coverage ± SE of the nominal 95 % intervals")
    print("method  tau    sites   n      mean (HK, t k-1)  prediction (t k-2)  z-interval")
    for method in ("reml", "dl"):
        for tau in (*TAUS, None):
            for band in (*K_BANDS, None):
                rows = [h for h in hits if h["method"] == method
                        and (tau is None or h["tau"] == tau)
                        and (band is None or band[0] <= h["k"] <= band[1])]  # fmt: skip
                t = "all" if tau is None else f"{tau:.2f}"
                b = "3-12" if band is None else f"{band[0]}-{band[1]}"
                print(f"{method:<7} {t:<6} {b:<7} {len(rows):<6} {_cov(rows, 'mean'):<17} "
                      f"{_cov(rows, 'prediction'):<19} {_cov(rows, 'z_mean')}")  # fmt: skip


def _profile_site(root: Path, n_patients: int, seed: int) -> Path:
    from crsbench.cohort.profile import profile_cohort
    from crsbench.cohort.spec import CohortSpec
    from crsbench.testing.cohort import write_cohort

    csv, images = write_cohort(root / "data", n_patients, classes=("benign", "malignant"),
                               images_per_patient=2, seed=seed, jitter=JITTER)  # fmt: skip
    spec = CohortSpec(data=csv, images=images, label_columns=("diagnosis",),
                      group_column="patient", encoders=("pixel", "random_cnn"),
                      out=root / "profile", device="cpu")  # fmt: skip
    return profile_cohort(spec, verdict=False, jobs=1).run.out_dir


def profiled_worlds(n_worlds: int, n_sites: int) -> list[float]:
    """z of every site pair and poolable quantity, over ``n_worlds`` profiled consortia."""
    from crsbench.consortium.export import build_summary
    from crsbench.consortium.summary import QUANTITIES

    zs, rng = [], np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as tmp:
        for w in range(n_worlds):
            sites = []
            for i in range(n_sites):
                store = _profile_site(Path(tmp) / f"w{w}s{i}", int(rng.integers(80, 200)),
                                      seed=100 * w + i)  # fmt: skip
                sites.append(build_summary(store, f"site_{i}"))
            for a, b in itertools.combinations(sites, 2):
                for e in a.encoders:
                    for q in QUANTITIES:
                        x, y = e.estimates[q], b.encoder(e.encoder).estimates[q]
                        if x.variance > 0 and y.variance > 0:
                            zs.append((x.value - y.value) / np.sqrt(x.variance + y.variance))
    return zs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=int, default=1000, help="worlds per tau")
    parser.add_argument("--profiled-worlds", type=int, default=2)
    parser.add_argument("--profiled-sites", type=int, default=3)
    args = parser.parse_args()
    t0 = time.perf_counter()
    hits = summary_worlds(args.worlds)
    if hits:
        report_summary_worlds(hits)
    print(f"summary_worlds_s={time.perf_counter() - t0:.1f}")
    t1 = time.perf_counter()
    zs = profiled_worlds(args.profiled_worlds, args.profiled_sites) if args.profiled_worlds else []
    within = float(np.mean(np.abs(zs) <= 1.96)) if zs else float("nan")
    spread = f"{np.std(zs):.2f}" if zs else "-"
    print(f"profiled worlds={args.profiled_worlds} sites={args.profiled_sites} pairs x "
          f"quantities={len(zs)} share |z|<=1.96: {within:.3f} "
          f"(sd of z {spread}) profiled_s={time.perf_counter() - t1:.1f}")  # fmt: skip
    reml = [h for h in hits if h["method"] == "reml"] or [{"mean": np.nan, "prediction": np.nan}]
    print(f"mean_coverage={np.mean([h['mean'] for h in reml]):.3f} "
          f"prediction_coverage={np.mean([h['prediction'] for h in reml]):.3f} "
          f"profiled_pairs_within={within:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
