"""A store without per-sample predictions (written before crsbench stored them) falls back to
the seed-only bootstrap, and says so wherever intervals are shown."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from crsbench.core.errors import ConfigError
from crsbench.scoring import axes_from_runs
from crsbench.stats.bootstrap import paired_seed_bootstrap
from crsbench.stats.leaderboard import build_leaderboard
from crsbench.stats.uncertainty import crs_uncertainty, indistinguishable_sentences
from crsbench.store import load_runs
from crsbench.testing import simulate_runs, write_store


@pytest.fixture(scope="module")
def old_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("old") / "store"
    write_store(simulate_runs(n_encoders=4, datasets=("isic2019",), seeds=3, rng_seed=1), path)
    return path


def test_falls_back_to_seed_only_with_a_note(old_store):
    per_seed = axes_from_runs(load_runs(old_store))
    unc = crs_uncertainty(per_seed, store=old_store, n_replicates=200, seed=5)
    assert unc.method == "seed-only" and unc.n_patients == {}
    assert "no per-sample predictions" in unc.note and "too narrow" in unc.note
    ref = paired_seed_bootstrap(per_seed, n_replicates=200, seed=5)
    pd.testing.assert_frame_equal(unc.result.ranks, ref.ranks)
    assert (unc.ranks()["interval"] == "seed-only").all()


def test_seed_only_by_name_has_no_note(old_store):
    per_seed = axes_from_runs(load_runs(old_store))
    unc = crs_uncertainty(per_seed, store=old_store, interval="seed-only", n_replicates=50)
    assert unc.method == "seed-only" and unc.note == ""
    with pytest.raises(ConfigError, match="'bogus'"):
        crs_uncertainty(per_seed, store=old_store, interval="bogus", n_replicates=50)


def test_leaderboard_and_cli_say_so(old_store):
    from crsbench.cli import app

    board = build_leaderboard(load_runs(old_store), n_replicates=100, store=old_store)
    assert "no per-sample predictions" in board.attrs["interval_note"]
    assert set(board.loc[board["tier"].notna(), "interval"]) == {"seed-only"}
    assert (board["crs_ci_low"] <= board["crs_ci_high"]).all()
    res = CliRunner().invoke(app, ["score", "--store", str(old_store), "--replicates", "100",
                                   "--out", str(old_store / "scores")])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "NOTE: intervals and tiers come from the seed-only bootstrap" in res.output
    assert "intervals: seed-only bootstrap, 100 replicates" in res.output


def test_indistinguishable_sentence_names_the_tier(old_store):
    per_seed = axes_from_runs(load_runs(old_store))
    unc = crs_uncertainty(per_seed, interval="seed-only", n_replicates=200)
    ranks = unc.result.ranks.copy()
    ranks["tier"] = pd.array([1, 1, 2, 3], dtype="Int64")
    unc.result = type(unc.result)(ranks, unc.result.pairwise, unc.result.replicates)
    lines = indistinguishable_sentences(unc)
    head, second = ranks["encoder"].iloc[0], ranks["encoder"].iloc[1]
    assert lines == [
        f"Tier 1: on these seeds, {head} is not distinguishable from {second} (the 95% interval "
        f"of each CRS difference with {head} includes 0; seed-only bootstrap)."
    ]
    assert np.isfinite(ranks["CRS"]).all()
