"""Coverage of crsbench's intervals on planted-truth worlds (docs/protocol.md section 9).

Draws worlds from one planted parameter set (``crsbench.testing.planted``: binormal scores
with patient clustering, planted miscalibration, drops per condition and per label fraction,
a CheXpert → MIMIC-CXR shift) and reports how often the 95 % intervals cover the population
CRS and axes, for the test-patient × seed bootstrap (basic intervals) and the seed-only one;
whether the planted leader is in tier 1; the P(rank 1) calibration table; beside them, the
coverage of the ECE interval centred on the debiased ECE (Kumar et al. 2019), not the protocol's.

Last line: ``coverage=<min over CRS, the axes and the verdict's JPEG drop and shift ECE increase>
seed_only_coverage=<…> rank1_in_tier1=<…>``.
Usage: ``python benchmarks/coverage.py [--worlds 200] [--patients 500] [--replicates 500]``
"""

from __future__ import annotations

import argparse
import time

from crsbench.stats.patient_bootstrap import SEED_ONLY, TEST_PATIENTS_X_SEEDS
from crsbench.testing.coverage import DEBIASED_ECE, run_coverage


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=int, default=200)
    parser.add_argument("--encoders", type=int, default=4)
    parser.add_argument("--patients", type=int, default=500, help="test patients per dataset")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--replicates", type=int, default=500)
    args = parser.parse_args()
    t0 = time.perf_counter()
    rep = run_coverage(args.worlds, n_encoders=args.encoders, n_patients=args.patients,
                       n_seeds=args.seeds, n_replicates=args.replicates)  # fmt: skip
    cov = rep.coverage()
    print(f"worlds={args.worlds} encoders={args.encoders} datasets=isic2019,chexpert(+mimic_cxr)")
    print(f"patients_per_dataset={args.patients} seeds={args.seeds} replicates={args.replicates}")
    print("coverage of the 95 % intervals (share of worlds x encoders/cells):")
    print(cov.to_string(float_format=lambda v: f"{v:.3f}"))
    print("P(rank 1) calibration (all encoders x worlds):")
    print(rep.calibration().to_string(float_format=lambda v: f"{v:.3f}"))
    print(f"elapsed_s={time.perf_counter() - t0:.1f}")
    main_cov = rep.protocol_min(TEST_PATIENTS_X_SEEDS)
    seed_cov = rep.protocol_min(SEED_ONLY)
    print(f"ece_debiased_interval_coverage={cov.loc[DEBIASED_ECE, TEST_PATIENTS_X_SEEDS]:.3f}  "
          "(interval around the debiased ECE; not in coverage=)")  # fmt: skip
    print(f"coverage={main_cov:.3f} seed_only_coverage={seed_cov:.3f} "
          f"rank1_in_tier1={rep.leader_in_tier1.mean():.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
