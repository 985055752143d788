"""``sharing_results``: the leaderboard, the analyses and the report of one store run the
bootstrap once, and only calls with the very same inputs share it."""

from __future__ import annotations

import pandas as pd
import pytest

from crsbench.scoring import axes_from_runs
from crsbench.stats import uncertainty as unc_mod
from crsbench.stats.shared import sharing_results
from crsbench.stats.uncertainty import crs_uncertainty
from crsbench.store import load_runs
from crsbench.testing import simulate_runs, write_store


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("shared") / "store"
    write_store(simulate_runs(n_encoders=3, datasets=("isic2019",), seeds=3, rng_seed=2), path)
    return path


@pytest.fixture()
def counted(monkeypatch):
    calls = []
    real = unc_mod._crs_uncertainty
    monkeypatch.setattr(unc_mod, "_crs_uncertainty", lambda *a: (calls.append(a), real(*a))[1])
    return calls


def test_same_inputs_share_one_bootstrap_inside_the_block(store, counted):
    per_seed = axes_from_runs(load_runs(store))
    alone = crs_uncertainty(per_seed, store=store, n_replicates=100, seed=3)
    with sharing_results():
        first = crs_uncertainty(per_seed, store=store, n_replicates=100, seed=3)
        again = crs_uncertainty(per_seed.copy(), "v2", store=store, n_replicates=100, seed=3)
    assert again is first and len(counted) == 2  # `alone` and `first`
    pd.testing.assert_frame_equal(first.result.ranks, alone.result.ranks)
    crs_uncertainty(per_seed, store=store, n_replicates=100, seed=3)  # outside: computed again
    assert len(counted) == 3


def test_any_changed_input_is_computed_afresh(store, counted):
    per_seed = axes_from_runs(load_runs(store))
    changed = per_seed.copy()
    changed.loc[changed.index[0], "auroc"] += 0.01
    with sharing_results():
        base = crs_uncertainty(per_seed, store=store, n_replicates=100, seed=3)
        others = [
            crs_uncertainty(per_seed, store=store, n_replicates=100, seed=4),
            crs_uncertainty(per_seed, store=store, n_replicates=101, seed=3),
            crs_uncertainty(per_seed, store=store, n_replicates=100, seed=3, rule="cohort"),
            crs_uncertainty(per_seed, store=store, n_replicates=100, seed=3, interval="seed-only"),
            crs_uncertainty(changed, store=store, n_replicates=100, seed=3),
            crs_uncertainty(per_seed, store=None, n_replicates=100, seed=3),
        ]
    assert len(counted) == 7 and all(o is not base for o in others)
