"""Coverage of crsbench's 95 % intervals on planted-truth worlds, per scenario
(docs/scoring.md, "Coverage on planted truth").

Scenarios (``crsbench.testing.scenarios``): binary at prevalence 0.3; 8-class top-label ECE
(ISIC-like); 5 ordinal classes at 300 test images (APTOS-like); 14 labels with rare ones
(CheXpert-like, with the MIMIC-CXR shift); near-tied perturbation drops at APTOS- and
CheXpert-like sizes; a planned cell not run. Each scenario's worlds come from several
independent parameter draws (a new one every ``--worlds-per-draw``). R's coverage is also
printed at each tie threshold κ without the percentile interval (rows ``R, kappa=…``; κ = 2
is the interval before R's union took its percentile interval); the worlds that choose κ (``--tune``)
use another seed stream than the reported ones. Each coverage is printed with its standard error (worlds as
the independent units); beside R, the bias of the plug-in R (the printed value) and of the
bias-corrected one.

Last line: ``coverage=<min over every scenario and interval printed> seed_only_coverage=<…>
rank1_in_tier1=<…>``.
Usage: ``python benchmarks/interval_coverage.py [--worlds 1000] [--replicates 200] [--scenarios a,b]
[--tune] [--candidates [ece,gap]] [--first-world N] [--out DIR]`` (``--candidates``: also the
interval methods compared on the tuning worlds, as methods ``candidate: …``; ``ece``, ``gap``
or ``ece,gap``: only C's, the leader gap's; ``--out``: each scenario's per-world records as
CSV, written as it finishes); ``--from-csv DIR [DIR …] [--markdown]`` prints the tables of
earlier runs' records together (disjoint ``--first-world`` ranges of a scenario add up to one
figure; ``--markdown``: one table, targets × scenarios). The reported run's records are kept
in ``benchmarks/results/coverage/`` (gzipped CSV): ``python benchmarks/interval_coverage.py --from-csv
benchmarks/results/coverage`` prints its tables again.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

from crsbench.stats.patient_bootstrap import SEED_ONLY, TEST_PATIENTS_X_SEEDS
from crsbench.testing.coverage import REPORTING, TUNING, CoverageRun, combine, run_scenario
from crsbench.testing.scenarios import SCENARIOS

KAPPAS = (0.0, 1.0, 2.0, 3.0, 100.0)
FIELDS = ("hits", "r_points", "rank1")


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
    parser.add_argument("--candidates", nargs="?", const="all", default="",
                        help="also the interval methods compared on the tuning worlds "
                             "('ece', 'gap' or 'ece,gap': only C's, the leader gap's)")  # fmt: skip
    parser.add_argument("--first-world", type=int, default=0, help="run worlds from this one")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--markdown", action="store_true",
                        help="with --from-csv: one Markdown table, targets x scenarios")  # fmt: skip
    parser.add_argument(
        "--from-csv",
        type=Path,
        nargs="*",
        default=None,
        help="print the tables of earlier --out folders (disjoint worlds) only",
    )
    args = parser.parse_args()
    if args.from_csv:
        run = _load(args.from_csv)
        print(_markdown(run)) if args.markdown else _summarise(run)
        return
    names = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    stream, kappas = (TUNING if args.tune else REPORTING), KAPPAS
    print(f"worlds={args.worlds} per scenario, a parameter draw every {args.worlds_per_draw}; "
          f"replicates={args.replicates}; stream={'tuning' if args.tune else 'reporting'}")  # fmt: skip
    runs = []
    for name in names:
        t0 = time.perf_counter()
        run = run_scenario(SCENARIOS[name], args.worlds, args.replicates, stream,
                           args.worlds_per_draw, kappas, progress=_progress(name, t0),
                           first_world=args.first_world, candidates=args.candidates)  # fmt: skip
        runs.append(run)
        _print_scenario(run, name)
        print(f"elapsed_s={time.perf_counter() - t0:.1f}", flush=True)
        if args.out is not None:
            args.out.mkdir(parents=True, exist_ok=True)
            for field in FIELDS:
                getattr(run, field).to_csv(args.out / f"{_stem(name)}.{field}.csv", index=False)
    _summarise(combine(runs), printed=True)


def _stem(name: str) -> str:
    return name.replace(" ", "_").replace(",", "")


def _load(folders: list[Path]) -> CoverageRun:
    """The records of earlier ``--out`` folders (one scenario's disjoint world ranges add)."""
    runs = []
    for folder in folders:
        for hits in sorted(folder.glob("*.hits.csv*")):  # .csv, or .csv.gz as kept in git
            stem, ext = hits.name.split(".hits.", 1)
            runs.append(CoverageRun(*(pd.read_csv(folder / f"{stem}.{f}.{ext}") for f in FIELDS)))
    if not runs:
        raise SystemExit(
            f"no coverage records (*.hits.csv or *.hits.csv.gz) in {list(map(str, folders))}"
        )
    return combine(runs)


def _markdown(run: CoverageRun) -> str:
    """The printed intervals' coverage (test patients × seeds, and the CRS seed-only) as one
    Markdown table: a row per target, a column per scenario, ``coverage ± se (worlds)``;
    then R's bias per scenario."""
    cov = run.coverage().reset_index()
    keep = cov["method"].isin([TEST_PATIENTS_X_SEEDS, SEED_ONLY]) & ~(
        (cov["method"] == SEED_ONLY) & (cov["target"] != "CRS")
    )
    cov = cov[keep]
    label = cov["target"].where(
        cov["method"] == TEST_PATIENTS_X_SEEDS, cov["target"] + ", seed-only"
    )
    cells = cov.assign(row=label, cell=[f"{c:.3f} ± {e:.3f} ({w})" for c, e, w in
                                        zip(cov["coverage"], cov["se"], cov["worlds"], strict=True)])  # fmt: skip
    table = cells.pivot(index="row", columns="scenario", values="cell").fillna("–")
    bias = run.r_bias()
    table.loc["plug-in R bias (share of R)"] = [
        f"{bias.loc[s, 'bias']:+.4f} ± {bias.loc[s, 'bias_se']:.4f} ({bias.loc[s, 'relative_bias']:+.0%})"
        for s in table.columns
    ]  # fmt: skip
    head = "| target | " + " | ".join(table.columns) + " |"
    rule = "|---" * (len(table.columns) + 1) + "|"
    rows = [f"| {i} | " + " | ".join(r) + " |" for i, r in table.iterrows()]
    return "\n".join([head, rule, *rows])


def _summarise(run: CoverageRun, printed: bool = False) -> None:
    if not printed:
        for name in run.hits["scenario"].unique():
            _print_scenario(run, name)
    print("\nP(rank 1) calibration (all scenarios, encoders x worlds):")
    print(run.calibration().to_string(float_format=lambda v: f"{v:.3f}"))
    print(f"coverage={run.interval_min(TEST_PATIENTS_X_SEEDS):.3f} "
          f"seed_only_coverage={run.interval_min(SEED_ONLY):.3f} "
          f"rank1_in_tier1={run.leader_in_tier1():.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
