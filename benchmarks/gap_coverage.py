"""Coverage of the intervals of differences on planted truth: every CRS difference (behind the
tiers), the leader's CRS gap (report section 4) and the at-a-glance table's leader-vs-runner-up gaps
(``crsbench.testing.gap_coverage``; docs/scoring.md, "Every printed interval").

Run: ``PYTHONPATH=src python benchmarks/gap_coverage.py [--worlds 200] [--patients 300]
[--seeds 2] [--replicates 200]``. Prints one row per target with its coverage, Monte-Carlo
standard error and number of intervals, then ``gap_coverage=<min over the 95% CIs>``.
"""

from __future__ import annotations

import argparse
import time

from crsbench.testing.gap_coverage import run_gap_coverage, summarise


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--worlds", type=int, default=200)
    ap.add_argument("--encoders", type=int, default=4)
    ap.add_argument("--patients", type=int, default=300)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--replicates", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t = time.time()
    hits = run_gap_coverage(args.worlds, args.encoders, n_patients=args.patients,
                            n_seeds=args.seeds, n_replicates=args.replicates, seed=args.seed)  # fmt: skip
    table = summarise(hits)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    ci = table[table["kind"] == "95% CI"]
    print(f"\n{time.time() - t:.0f} s")
    print(f"gap_coverage={ci['coverage'].min():.3f}")


if __name__ == "__main__":
    main()
