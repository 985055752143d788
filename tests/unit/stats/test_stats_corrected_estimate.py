"""The bias-corrected estimate printed beside a basic interval (docs/scoring.md, "Every printed
interval"): ``2·θ̂ − mean(θ*)``, inside the interval where the plug-in is not, with one short
phrase saying why."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from rich.console import Console

from crsbench.cli.leaderboard_view import print_leaderboard
from crsbench.stats.intervals import basic_interval, corrected_estimate, outside_phrase
from crsbench.stats.patient_bootstrap import TEST_PATIENTS_X_SEEDS, patient_seed_bootstrap
from crsbench.testing.planted import draw_world, planted_parameters, population_table


def _biased_case():
    """Hand-worked: the plug-in is 0.20 and the replicates are 0.29, 0.30, 0.31 repeated (a
    statistic biased upward by 0.10), so the basic interval is about [0.09, 0.11], the plug-in
    lies above it and the corrected estimate 2·0.20 − 0.30 = 0.10 sits in its middle."""
    point = np.array([0.20])
    reps = np.tile([0.29, 0.30, 0.31], 100)[:, None]
    return point, reps


def test_corrected_estimate_is_inside_the_basic_interval_where_the_plug_in_is_not():
    point, reps = _biased_case()
    lo, hi = basic_interval(point, reps)
    fixed = corrected_estimate(point, reps)
    assert fixed[0] == pytest.approx(0.10)
    assert lo[0] == pytest.approx(0.09) and hi[0] == pytest.approx(0.11)
    assert lo[0] <= fixed[0] <= hi[0] and not lo[0] <= point[0] <= hi[0]
    phrase = outside_phrase(point[0], lo[0], hi[0], fixed[0])
    assert phrase == (
        "bias-corrected 0.100; the plug-in 0.200 is outside its interval because the "
        "bootstrap finds it biased"
    )
    assert outside_phrase(0.10, lo[0], hi[0], fixed[0]) == ""  # inside: nothing to say
    assert outside_phrase(float("nan"), lo[0], hi[0], fixed[0]) == ""


def test_corrected_estimate_skips_missing_replicates_and_an_unscored_column():
    point = np.array([0.5, np.nan])
    reps = np.array([[0.4, np.nan], [np.nan, np.nan], [0.6, np.nan], [0.8, np.nan]])
    got = corrected_estimate(point, reps)
    assert got[0] == pytest.approx(1.0 - 0.6) and np.isnan(got[1])


def test_leaderboard_shows_the_corrected_estimate_and_the_phrase(capsys):
    from crsbench.cli.leaderboard_view import LEADERBOARD_COLUMNS

    point, reps = _biased_case()
    lo, hi = basic_interval(point, reps)
    board = pd.DataFrame({"rank_crs": [1], "encoder": ["random_cnn"], "CRS": point,
                          "crs_ci_low": lo, "crs_ci_high": hi,
                          "crs_corrected": corrected_estimate(point, reps),
                          "interval": [TEST_PATIENTS_X_SEEDS]})  # fmt: skip
    for col in LEADERBOARD_COLUMNS:
        board[col] = board.get(col, 1.0)
    print_leaderboard(Console(file=io.StringIO(), force_terminal=False), board, title="t")
    got = capsys.readouterr()
    header, row = got.out.splitlines()[:2]
    cells = dict(zip(header.split("\t"), row.split("\t"), strict=True))
    assert cells["ci"] == "[0.090, 0.110]" and cells["crs_corrected"] == "0.100"
    assert cells["CRS"] == "0.200"  # the protocol's plug-in stays the headline
    assert got.err.strip() == (
        "note: random_cnn: bias-corrected 0.100; the plug-in 0.200 is outside its interval "
        "because the bootstrap finds it biased."
    )
    screen = io.StringIO()
    print_leaderboard(Console(file=screen, force_terminal=True, width=300), board, title="t")
    assert "CRS bias-corrected" in screen.getvalue() and "95% CI" in screen.getvalue()


def test_crs_corrected_column_equals_two_plug_in_minus_replicate_mean(tmp_path):
    """On a small planted world, the bootstrap's ``crs_corrected`` (as written to CSV) is
    2·CRS − the mean of the raw replicates, computed here replicate by replicate."""
    rng = np.random.default_rng(5)
    params = planted_parameters(3, ("isic2019",), rng)
    world = draw_world(params, 80, 2, rng, population_table(params))
    res = patient_seed_bootstrap(world.cells, n_replicates=60, seed=3)
    res.ranks.to_csv(tmp_path / "bootstrap_ranks.csv", index=False)
    table = pd.read_csv(tmp_path / "bootstrap_ranks.csv").set_index("encoder").sort_index()
    raw = res.replicates  # columns in sorted encoder order
    for j, enc in enumerate(table.index):
        total = sum(float(raw[b, j]) for b in range(raw.shape[0]))
        want = 2 * table.loc[enc, "CRS"] - total / raw.shape[0]
        assert table.loc[enc, "crs_corrected"] == pytest.approx(want, abs=1e-12)


def test_verdict_page_shows_the_corrected_value_and_the_phrase_only_where_outside():
    from crsbench.report.sections_at_a_glance import readable_at_a_glance

    base = {"dataset": "chexpert", "question": "calibration", "asks": "Which is best calibrated?",
            "value_name": "C: ECE", "higher_is_better": False, "runner_up": "b",
            "runner_up_value": 0.3, "gap": 0.05, "gap_ci_low": -0.01, "gap_ci_high": 0.08,
            "gap_corrected": 0.04, "distinguishable": False, "interval": TEST_PATIENTS_X_SEEDS,
            "interval_kind": "95% CI", "gap_interval_kind": "95% CI"}  # fmt: skip
    rows = [
        dict(base, leader="a", value=0.20, ci_low=0.09, ci_high=0.11, value_corrected=0.10),
        dict(base, leader="c", value=0.10, ci_low=0.09, ci_high=0.11, value_corrected=0.10),
    ]
    table = readable_at_a_glance(pd.DataFrame(rows), [True, False])  # a's pretraining: flagged
    assert list(table["bias-corrected"]) == [
        "bias-corrected 0.100; the plug-in 0.200 is outside its interval because the bootstrap "
        "finds it biased",
        "0.100",
    ]
    assert table["value [interval]"].iloc[0] == "0.200 [0.090, 0.110]"  # the plug-in leads
    assert list(table["leader"]) == ["a †", "c"]
    assert "bias-corrected 0.040)" in table["runner-up"].iloc[0]
