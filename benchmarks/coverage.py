"""Coverage of crsbench's 95 % intervals on planted-truth worlds, per scenario
(docs/scoring.md, "Coverage on planted truth").

Scenarios (``crsbench.testing.scenarios``): binary at prevalence 0.3; 8-class top-label ECE
(ISIC-like); 5 ordinal classes at 300 test images (APTOS-like); 14 labels with rare ones
(CheXpert-like, with the MIMIC-CXR shift); near-tied perturbation drops at APTOS- and
CheXpert-like sizes; a planned cell not run. Each scenario's worlds come from several
independent parameter draws (a new one every ``--worlds-per-draw``). R's coverage is also
printed at each tie threshold κ (rows ``R, kappa=…``); the worlds that choose κ (``--tune``)
use another seed stream than the reported ones. Each coverage is printed with its standard error (worlds as
the independent units); beside R, the bias of the plug-in R (the printed value) and of the
bias-corrected one.

Last line: ``coverage=<min over every scenario and interval printed> seed_only_coverage=<…>
rank1_in_tier1=<…>``.
Usage: ``python benchmarks/coverage.py [--worlds 1000] [--replicates 200] [--scenarios a,b]
[--tune] [--out DIR]`` (``--out``: each scenario's per-world records as CSV, written as it
finishes).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

from crsbench.stats.patient_bootstrap import SEED_ONLY, TEST_PATIENTS_X_SEEDS
from crsbench.testing.coverage import REPORTING, TUNING, combine, run_scenario
from crsbench.testing.scenarios import SCENARIOS

KAPPAS = (0.0, 1.0, 2.0, 3.0, 100.0)


def _fmt(cov: pd.DataFrame) -> pd.DataFrame:
    """``coverage ± se`` per method (rows: targets), with the worlds behind each."""
    cells = cov.apply(lambda r: f"{r['coverage']:.3f} ± {r['se']:.3f}", axis=1)
    table = cells.unstack("method").fillna("")
    table["worlds"] = cov["worlds"].groupby("target").max()
    return table


def _progress(name: str, t0: float):
    def report(w: int) -> None:
        if (w + 1) % 50 == 0:
            print(f"{name}: {w + 1} worlds, {time.perf_counter() - t0:.0f} s", file=sys.stderr,
                  flush=True)  # fmt: skip

    return report


def _print_scenario(run, name: str) -> None:
    cov = run.coverage().loc[name]
    print(f"\n== {name}")
    print(_fmt(cov).to_string())
    b = run.r_bias().loc[name]
    print(f"R: population mean {b['r_true']:.4f}; plug-in bias {b['bias']:+.4f} ± "
          f"{b['bias_se']:.4f} ({b['relative_bias']:+.0%} of R); bias-corrected "
          f"{b['bias_corrected']:+.4f} ({b['relative_bias_corrected']:+.0%})")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=int, default=200, help="worlds per scenario")
    parser.add_argument("--worlds-per-draw", type=int, default=100)
    parser.add_argument("--replicates", type=int, default=200)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--tune", action="store_true", help="the worlds that choose κ")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    names = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    stream, kappas = (TUNING if args.tune else REPORTING), KAPPAS
    print(f"worlds={args.worlds} per scenario, a parameter draw every {args.worlds_per_draw}; "
          f"replicates={args.replicates}; stream={'tuning' if args.tune else 'reporting'}")  # fmt: skip
    runs = []
    for name in names:
        t0 = time.perf_counter()
        run = run_scenario(SCENARIOS[name], args.worlds, args.replicates, stream,
                           args.worlds_per_draw, kappas, progress=_progress(name, t0))  # fmt: skip
        runs.append(run)
        _print_scenario(run, name)
        print(f"elapsed_s={time.perf_counter() - t0:.1f}", flush=True)
        if args.out is not None:
            args.out.mkdir(parents=True, exist_ok=True)
            stem = name.replace(" ", "_").replace(",", "")
            for field in ("hits", "r_points", "rank1"):
                getattr(run, field).to_csv(args.out / f"{stem}.{field}.csv", index=False)
    run = combine(runs)
    print("\nP(rank 1) calibration (all scenarios, encoders x worlds):")
    print(run.calibration().to_string(float_format=lambda v: f"{v:.3f}"))
    print(f"coverage={run.interval_min(TEST_PATIENTS_X_SEEDS):.3f} "
          f"seed_only_coverage={run.interval_min(SEED_ONLY):.3f} "
          f"rank1_in_tier1={run.leader_in_tier1():.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
