"""The verdict page's intervals and its ``--compare`` table, on stores written by the real
writer (:func:`crsbench.testing.write_store`; these stores keep no per-sample predictions).

The test-patient × seed intervals of a real profile are checked in
tests/integration/test_cohort_profile_resume.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.cohort.verdict_page import verdict_data as compute_verdict
from crsbench.cohort.verdict_page import write_verdict
from crsbench.scoring import axes_from_runs, load_anchors
from crsbench.stats import paired_seed_bootstrap
from crsbench.stats.cohort_verdict import N_REPLICATES, ONE_SEED_NOTE
from crsbench.stats.leaderboard import build_leaderboard
from crsbench.store import load_runs
from crsbench.testing import simulate_runs, write_store

COHORT_ENCODERS = ("dinov2", "biomedclip", "rad_dino")
#: Planted clean full-label (AUROC, ECE) per (encoder, dataset), every seed.
BENCH_PLANT = {
    ("dinov2", "isic2019"): (0.80, 0.04),
    ("dinov2", "chexpert"): (0.90, 0.10),
    ("biomedclip", "isic2019"): (0.70, 0.02),
    ("biomedclip", "chexpert"): (0.76, 0.08),
}
COHORT_PLANT = {"dinov2": (0.66, 0.05), "biomedclip": (0.72, 0.03), "rad_dino": (0.81, 0.12)}


def _main(df: pd.DataFrame) -> pd.Series:
    return ((df["regime"] == "frozen") & (df["probe"] == "logistic") & np.isclose(df["layer"], 1)
            & np.isclose(df["fraction"], 1) & (df["recalibrator"] == "none")
            & (df["condition"] == "clean"))  # fmt: skip


def _store(path: Path, encoders, datasets, seeds: int, plant: dict) -> Path:
    df = simulate_runs(n_encoders=15, datasets=datasets, seeds=seeds, rng_seed=0)
    df = df[df["encoder"].isin(encoders)].reset_index(drop=True)
    for (enc, ds), (auc, ece) in plant.items():
        rows = _main(df) & (df["encoder"] == enc) & (df["dataset"] == ds)
        assert rows.sum() == seeds
        df.loc[rows, ["auroc", "ece"]] = [auc, ece]
    write_store(df, path)
    return path


@pytest.fixture(scope="module")
def cohort_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    plant = {(e, "chexpert"): v for e, v in COHORT_PLANT.items()}
    return _store(tmp_path_factory.mktemp("cohort") / "store", COHORT_ENCODERS, ("chexpert",),
                  3, plant)  # fmt: skip


@pytest.fixture(scope="module")
def bench_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _store(tmp_path_factory.mktemp("bench") / "store", ("dinov2", "biomedclip"),
                  ("isic2019", "chexpert"), 2, BENCH_PLANT)  # fmt: skip


def test_without_predictions_the_intervals_fall_back_to_seed_only_loudly(cohort_store) -> None:
    d = compute_verdict(cohort_store)
    assert d.interval == "seed-only"
    assert "no per-sample predictions" in d.interval_note and "too narrow" in d.interval_note
    per_seed = axes_from_runs(load_runs(cohort_store))
    ref = paired_seed_bootstrap(per_seed, load_anchors(None), n_replicates=N_REPLICATES, seed=0)
    ref_ci = ref.ranks.set_index("encoder")
    board = d.board.set_index("encoder")
    assert set(board["interval"]) == {"seed-only"}
    for enc in COHORT_ENCODERS:
        assert board.loc[enc, "crs_ci_low"] == ref_ci.loc[enc, "crs_ci_low"]
        assert board.loc[enc, "crs_ci_high"] == ref_ci.loc[enc, "crs_ci_high"]
    page = write_verdict(cohort_store).read_text(encoding="utf-8")
    assert "NOTE: intervals and tiers come from the seed-only bootstrap" in page
    assert "seed-only ranges, not 95% CIs (2,000 replicates" in page
    assert page.count("<td>seed-only</td>") == len(COHORT_ENCODERS)  # beside each interval


def test_the_verdict_command_says_the_fallback_on_stderr(cohort_store, tmp_path) -> None:
    r = CliRunner().invoke(app, ["verdict", "--store", str(cohort_store),
                                 "--out", str(tmp_path / "v.html")])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "NOTE: intervals and tiers come from the seed-only bootstrap" in r.output
    assert "(CRS intervals: seed-only bootstrap)" in r.output
    r = CliRunner().invoke(app, ["verdict", "--store", str(cohort_store), "--interval", "seeds"])
    assert r.exit_code != 0 and "'seeds'" in r.output


def test_one_seed_gives_no_interval_and_says_why(tmp_path) -> None:
    store = _store(tmp_path / "store", COHORT_ENCODERS, ("chexpert",), 1, {})
    d = compute_verdict(store)
    assert d.board["crs_ci_low"].isna().all() and d.board["crs_ci_high"].isna().all()
    assert d.board["CRS"].notna().all() and d.interval == ""
    assert ONE_SEED_NOTE in d.interval_note


def test_compare_puts_the_benchmark_beside_the_cohort(cohort_store, bench_store) -> None:
    d = compute_verdict(cohort_store, compare=bench_store)
    cmp = d.compare.set_index("encoder")
    assert set(cmp.index) == set(COHORT_ENCODERS)
    for enc, (auc, ece) in COHORT_PLANT.items():  # the cohort's own planted values
        assert cmp.loc[enc, "cohort_auroc"] == pytest.approx(auc, abs=1e-12)
        assert cmp.loc[enc, "cohort_ece"] == pytest.approx(ece, abs=1e-12)
    # benchmark: the mean over its two datasets of the planted values
    assert cmp.loc["dinov2", "benchmark_auroc"] == pytest.approx(0.85, abs=1e-12)
    assert cmp.loc["dinov2", "benchmark_ece"] == pytest.approx(0.07, abs=1e-12)
    assert cmp.loc["biomedclip", "benchmark_auroc"] == pytest.approx(0.73, abs=1e-12)
    assert cmp.loc["biomedclip", "benchmark_ece"] == pytest.approx(0.05, abs=1e-12)
    bench = build_leaderboard(load_runs(bench_store), n_replicates=0).set_index("encoder")
    own = build_leaderboard(load_runs(cohort_store), n_replicates=0).set_index("encoder")
    for enc in ("dinov2", "biomedclip"):
        assert cmp.loc[enc, "benchmark_CRS"] == pytest.approx(bench.loc[enc, "CRS"], abs=1e-12)
    for enc in COHORT_ENCODERS:
        assert cmp.loc[enc, "cohort_CRS"] == pytest.approx(own.loc[enc, "CRS"], abs=1e-12)
    absent = cmp.loc["rad_dino", [c for c in cmp.columns if c.startswith("benchmark_")]]
    assert absent.isna().all()  # the benchmark lacks rad_dino: —, never a number
    page = write_verdict(cohort_store, compare=bench_store).read_text(encoding="utf-8")
    assert 'id="compare"' in page and ">0.850<" in page and ">0.730<" in page


def test_small_test_set_and_no_shift_term_are_said_before_any_compare(tmp_path, bench_store):
    import json

    from crsbench.stats.cohort_verdict import ece_size_note, r_shift_note
    from crsbench.stats.ece_bias import calibrated_ece, ece_readable

    store = _store(tmp_path / "store", COHORT_ENCODERS, ("isic2019",), 2, {})
    (store / "cohort.json").write_text(json.dumps({"split_sizes": {"test": 120},
                                                   "prevalence": {}, "positives": {}}))  # fmt: skip
    d = compute_verdict(store, compare=bench_store)
    floor = calibrated_ece(120)
    assert 0.067 < floor < 0.083  # between the table's 150 and 100 patients
    assert d.ece_note.startswith("The test set is too small for the ECE to be read")
    assert f"about {floor:.3f} on 120 test patients" in d.ece_note
    assert d.r_note.startswith("R on this cohort has no shift term")
    page = write_verdict(store, compare=bench_store).read_text(encoding="utf-8")
    assert page.index("no shift term") < page.index('id="compare"')
    assert page.index("too small for the ECE to be read") < page.index('id="ranking"')
    # a large test set: the floor is said, not "too small"; a cohort with a shift: no R note
    assert ece_readable(1000) and ece_size_note(1000).startswith("ECE at this size: ")
    assert "about 0.026 on 1,000 test patients" in ece_size_note(1000)
    assert r_shift_note(load_runs(bench_store)) == ""  # its CheXpert cells have MIMIC-CXR
