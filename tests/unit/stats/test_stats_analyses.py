"""Rank agreement, paired-seed bootstrap, insertion experiment, the section-6 analyses, CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from crsbench.scoring import axes_from_runs, crs_table, load_anchors, seed_means
from crsbench.stats import (
    insertion_experiment,
    insertion_summary,
    label_efficiency_correlations,
    layer_depth,
    leave_one_dataset_out,
    paired_seed_bootstrap,
    rank_agreement,
    rank_moves,
    recalibration_effect,
    regime_comparison,
    shift_welch,
)
from crsbench.stats.bootstrap import axes_cube, replicate_scores, resample_counts
from crsbench.testing import simulate_runs, write_store
from crsbench.testing.simulated_store import _encoder_effects

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def runs() -> pd.DataFrame:
    return simulate_runs(seeds=3, regimes=("frozen", "lora"))


@pytest.fixture(scope="module")
def per_seed(runs) -> pd.DataFrame:
    return axes_from_runs(runs)


def test_fifteen_items_with_21_reversed_pairs_give_tau_0600():
    a = {f"e{i}": float(15 - i) for i in range(15)}
    order_b = [6, 5, 4, 3, 2, 1, 0, *range(7, 15)]  # reversing 7 items: 7*6/2 = 21 inversions
    b = {f"e{i}": float(15 - pos) for pos, i in enumerate(order_b)}
    out = rank_agreement(a, b)
    assert out["reversed_pairs"] == 21 and out["n_pairs"] == 105
    assert out["kendall_tau"] == pytest.approx(0.600)
    keys = sorted(a)
    assert out["spearman_rho"] == pytest.approx(
        sps.spearmanr([a[k] for k in keys], [b[k] for k in keys]).statistic
    )
    # e0..e6 move |6-0|, |4-2|... : displacements 6,4,2,0,2,4,6 over 15 items
    assert out["mean_abs_displacement"] == pytest.approx(24 / 15)
    assert out["top3_overlap"] == pytest.approx(0.0)


def test_agreement_matches_scipy_with_ties():
    rng = np.random.default_rng(0)
    x, y = np.round(rng.normal(size=12), 1), np.round(rng.normal(size=12), 1)
    x[3] = x[4]
    a = {f"k{i}": v for i, v in enumerate(x)}
    b = {f"k{i}": v for i, v in enumerate(y)}
    out = rank_agreement(a, b)
    assert out["kendall_tau"] == pytest.approx(sps.kendalltau(x, y).statistic)
    assert out["spearman_rho"] == pytest.approx(sps.spearmanr(x, y).statistic)
    moves = rank_moves(a, b, names=("auroc", "crs"))
    assert (moves["rank_move"] == moves["rank_auroc"] - moves["rank_crs"]).all()


def test_bootstrap_reproducible_and_probabilities_sum_to_one(per_seed):
    r1 = paired_seed_bootstrap(per_seed, n_replicates=300, seed=7)
    r2 = paired_seed_bootstrap(per_seed, n_replicates=300, seed=7)
    np.testing.assert_array_equal(r1.replicates, r2.replicates)
    assert r1.ranks["p_rank1"].sum() == pytest.approx(1.0)
    assert r1.ranks["p_top3"].sum() == pytest.approx(3.0)
    r3 = paired_seed_bootstrap(per_seed, n_replicates=300, seed=8)
    assert not np.array_equal(r1.replicates, r3.replicates)
    assert (r1.pairwise["ci_low"] <= r1.pairwise["ci_high"]).all()
    assert r1.ranks["tier"].iloc[0] == 1 and r1.ranks["tier"].is_monotonic_increasing


def test_bootstrap_vectorised_equals_loop_over_crs_table(per_seed):
    anchors = load_anchors()
    cube = axes_cube(per_seed)
    counts = resample_counts(4, len(cube.seeds), np.random.default_rng(2))
    vec = replicate_scores(cube, counts, anchors)
    for b in range(4):
        w = np.repeat(cube.seeds, counts[b])
        sub = per_seed[per_seed["seed"].isin(w)]
        # seed means with multiplicities: weight each seed row by its count
        weights = sub["seed"].map(dict(zip(cube.seeds, counts[b], strict=True)))
        cols = ["auroc", "ece", "retention", "robustness_drop"]
        sums = sub[cols].mul(weights, axis=0).groupby([sub["encoder"], sub["dataset"]]).sum()
        cells = (sums.div(weights.groupby([sub["encoder"], sub["dataset"]]).sum(), axis=0)
                 .reset_index())  # fmt: skip
        loop = crs_table(cells, anchors).groupby("encoder")["CRS"].mean()
        np.testing.assert_allclose(vec[b], loop.loc[cube.encoders].to_numpy(), atol=1e-12)


def test_clearly_separated_panel_gives_leader_probability_one():
    rows = []
    for i, enc in enumerate(["top", "mid", "low"]):
        for s in range(5):
            rows.append({"encoder": enc, "dataset": "d", "seed": s,
                         "auroc": 0.95 - 0.15 * i + 0.001 * s, "ece": 0.02 + 0.05 * i,
                         "retention": 0.95 - 0.1 * i, "robustness_drop": 0.02 + 0.05 * i})  # fmt: skip
    res = paired_seed_bootstrap(pd.DataFrame(rows), n_replicates=500, seed=0)
    ranks = res.ranks.set_index("encoder")
    assert ranks.loc["top", "p_rank1"] == 1.0 and ranks.loc["low", "p_rank1"] == 0.0
    assert list(ranks["tier"]) == [1, 2, 3]


def test_insertion_fixed_is_exactly_zero_cohort_moves(per_seed):
    cells = seed_means(per_seed)
    trials = insertion_experiment(cells, n_trials=4, seed=1)
    summary = insertion_summary(trials).set_index("rule")
    assert summary.loc["fixed", "max_displacement"] == 0.0
    assert summary.loc["cohort", "mean_displacement"] > 0.0
    assert set(trials["source"]) == {"store"}
    few = cells[cells["encoder"].isin(sorted(cells["encoder"].unique())[:6])]
    gen = insertion_experiment(few, n_trials=2, seed=1)
    assert set(gen["source"]) == {"generated"}
    assert gen.loc[gen["rule"] == "fixed", "max_displacement"].max() == 0.0


def test_shift_welch_matches_scipy():
    auc = {"a": 0.7, "b": 0.75, "c": 0.72, "x": 0.5, "y": 0.55, "z": 0.6, "q": 0.9}
    groups = {"a": "medical", "b": "medical", "c": "medical", "x": "general", "y": "general",
              "z": "general"}  # fmt: skip
    out = shift_welch(auc, groups).iloc[0]
    ref = sps.ttest_ind([0.7, 0.75, 0.72], [0.5, 0.55, 0.6], equal_var=False)
    assert out["t"] == pytest.approx(ref.statistic) and out["p_value"] == pytest.approx(ref.pvalue)
    assert out["n_medical"] == 3 and out["mean_general"] == pytest.approx(0.55)


def test_section6_analyses_on_simulated_runs(runs, per_seed):
    recal = recalibration_effect(runs, n_boot=200).set_index("method")
    assert set(recal.index) == {"temperature", "vector", "isotonic", "dirichlet"}
    assert (recal["ece_after"] < recal["ece_before"]).all()
    assert (recal["abs_reduction_ci_low"] <= recal["mean_abs_reduction"]).all()
    cells = crs_table(seed_means(per_seed))
    corr = label_efficiency_correlations(cells).set_index(["level", "summary"])
    assert corr.loc[("encoders", "aulc"), "spearman_rho"] > 0.8
    depth = layer_depth(runs)  # chosen on validation: the planted best depth of each encoder
    planted = _encoder_effects(15, np.random.default_rng(0)).set_index("encoder")["best_depth"]
    assert len(depth) == 15 and (depth["best_depth"] == depth["encoder"].map(planted)).all()
    assert (depth.loc[depth["best_depth"] == 1.0, "gain_over_last"] == 0).all()
    lodo = leave_one_dataset_out(cells)
    assert set(lodo["held_out"]) == {"isic2019", "aptos2019", "chexpert"}
    reg = regime_comparison(runs)
    assert set(reg["scope"]) == {"isic2019", "aptos2019", "chexpert", "all"}
    assert reg["kendall_tau"].between(-1, 1).all()
    assert regime_comparison(runs[runs["regime"] == "frozen"]).empty


def test_cli_score_and_analyze_end_to_end(tmp_path):
    from typer.testing import CliRunner

    from crsbench.cli import app

    write_store(simulate_runs(n_encoders=8, seeds=3), tmp_path / "store")
    cli = CliRunner()
    res = cli.invoke(app, ["score", "--store", str(tmp_path / "store"), "--replicates", "200"])
    assert res.exit_code == 0, res.output
    md = (tmp_path / "store" / "scores" / "leaderboard.md").read_text()
    tex = (tmp_path / "store" / "scores" / "leaderboard.tex").read_text()
    board = pd.read_csv(tmp_path / "store" / "scores" / "leaderboard.csv")
    assert len(board) == 8 and set(board["anchors_version"]) == {"v2"}  # the store recorded v2
    assert "| rank_crs |" in md and r"\toprule" in tex
    res = cli.invoke(app, ["analyze", "--store", str(tmp_path / "store"), "--replicates", "100"])
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "store" / "analysis" / "summary.json").read_text())
    assert summary["anchors_version"] == "v2"
    assert "regime_comparison" in summary["skipped"]
    assert summary["analyses"]["insertion"]["source"] == "generated"
    for name in ("bootstrap", "agreement_auroc_vs_crs", "shift_welch", "recalibration"):
        assert (tmp_path / "store" / "analysis" / f"{name}.csv").is_file()
    res = cli.invoke(app, ["score", "--store", str(tmp_path / "missing")])
    assert res.exit_code == 2


def test_bootstrap_benchmark_quick_smoke():
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bootstrap.py"), "--quick", "--seed-only"],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    lines = out.stdout.splitlines()
    assert lines[0].startswith("speedup=") and float(lines[0].split("=")[1]) > 1.0
    assert "p_rank1_sum=1.000000" in lines
