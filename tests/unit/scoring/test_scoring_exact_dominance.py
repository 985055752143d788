"""Anchors v2: the dominated share of the uniform reference computed exactly (no grid)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crsbench import protocol
from crsbench.core.errors import ConfigError
from crsbench.scoring import DominanceCounter, crs_table, halton_panel, load_anchors
from crsbench.scoring.anchors import anchors_for_runs, save_anchors
from crsbench.scoring.crs import score_array
from crsbench.scoring.dominance import (
    UniformDominance,
    UniformReference,
    dominance_counter,
)

AXES_FRAME = pd.DataFrame(
    {
        "encoder": ["a", "b", "c"],
        "auroc": [0.9, 0.75, 0.6],
        "ece": [0.05, 0.1, 0.2],
        "retention": [0.95, 0.8, 0.7],
        "robustness_drop": [0.05, 0.1, 0.2],
    }
)


def _brute_share(points: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Share of ``points`` each row of ``u`` weakly dominates, one comparison at a time."""
    return np.array([((points <= q).all(axis=1) & (points != q).any(axis=1)).mean() for q in u])


def test_exact_share_by_hand():
    share = UniformDominance().share(
        np.array(
            [
                [0.5, 0.5, 0.5, 0.5],  # 1/16
                [1.0, 1.0, 1.0, 1.0],  # the whole cube
                [0.2, 1.0, 1.0, 1.0],  # one axis: its length
                [0.5, 0.4, 1.0, 0.0],  # a zero axis dominates nothing
                [0.5, 0.8, 0.25, 0.6],  # 0.06
                [1.5, -0.2, 0.5, 0.5],  # clipped to the cube: 0
                [0.5, np.nan, 0.5, 0.5],
            ]
        )
    )
    np.testing.assert_allclose(share[:6], [0.0625, 1.0, 0.2, 0.0, 0.06, 0.0], atol=1e-15)
    assert np.isnan(share[6])
    with pytest.raises(ValueError, match="4 columns"):
        UniformDominance().share(np.zeros((2, 3)))


def test_exact_share_matches_a_million_uniform_points():
    rng = np.random.default_rng(7)
    points = rng.random((1_000_000, 4))
    u = np.vstack([rng.uniform(0.2, 1.0, (12, 4)), [[0.5] * 4, [0.9, 0.95, 0.8, 0.85]]])
    exact = UniformDominance().share(u)
    brute = _brute_share(points, u)
    se = np.sqrt(exact * (1 - exact) / len(points))
    assert np.all(np.abs(brute - exact) <= 4 * se)
    # the 256-point Halton panel (v1) is off by more than that: the grid error v2 removes
    halton = DominanceCounter(halton_panel(256)).share(u)
    assert np.max(np.abs(halton - exact)) > 4 * np.max(se)


def test_exact_share_is_the_limit_of_the_halton_panel():
    u = np.random.default_rng(3).uniform(0.3, 1.0, (200, 4))
    exact = UniformDominance().share(u)
    err = [np.abs(DominanceCounter(halton_panel(n)).share(u) - exact).max() for n in (256, 4096)]
    assert err[1] < err[0] / 4 and err[1] < 0.005


def test_v2_is_the_default_and_v1_stays_by_name():
    v2, v1 = load_anchors(), load_anchors("v1")
    assert protocol.ANCHORS_VERSION == "v2" and v2.version == "v2"
    assert isinstance(v2.panel, UniformReference) and isinstance(v2.panel_for("isic2019"),
                                                                 UniformReference)  # fmt: skip
    assert v2.bounds == v1.bounds and v2.weights == v1.weights
    assert isinstance(dominance_counter(v2.panel), UniformDominance)
    t2, t1 = crs_table(AXES_FRAME, "v2"), crs_table(AXES_FRAME, "v1")
    u = t2[["u_auroc", "u_ece", "u_retention", "u_robustness"]].to_numpy()
    np.testing.assert_allclose(t2["P"], np.prod(u, axis=1), atol=1e-15)
    np.testing.assert_allclose(t1["P"], DominanceCounter(halton_panel(256)).share(u), atol=1e-12)
    np.testing.assert_allclose(t2[["I", "W"]], t1[["I", "W"]])
    assert not np.allclose(t2["P"], t1["P"])
    assert set(t2["anchors_version"]) == {"v2"} and set(t1["anchors_version"]) == {"v1"}


def test_score_array_and_the_dominance_counter_use_the_exact_reference():
    raw = AXES_FRAME[["auroc", "ece", "retention", "robustness_drop"]].to_numpy()
    anc = load_anchors("v2")
    out = score_array(raw[None, :, :], anc)  # one cell, three encoders
    np.testing.assert_allclose(out["P"][0], np.prod(out["u"][0], axis=1), atol=1e-15)
    q = np.array([[0.5, 0.5, 1.0, 1.0]])
    assert dominance_counter(UniformReference()).share(q) == pytest.approx(0.25)


def test_v2_roundtrips_and_rejects_other_words(tmp_path):
    path = save_anchors(load_anchors("v2"), tmp_path / "copy.yaml")
    assert "default: uniform-exact" in path.read_text()
    again = load_anchors(path)
    assert isinstance(again.panel, UniformReference) and again.version == "v2"
    path.write_text(path.read_text().replace("uniform-exact", "uniform"))
    with pytest.raises(ConfigError, match="uniform-exact"):
        load_anchors(path)


def test_anchors_for_runs_follows_what_the_store_recorded():
    runs = pd.DataFrame({"anchors_version": ["v1", "v1"]})
    assert anchors_for_runs(None, runs).version == "v1"
    assert anchors_for_runs("v2", runs).version == "v2"  # --anchors wins
    assert anchors_for_runs(None, runs.iloc[:0]).version == protocol.ANCHORS_VERSION
    assert anchors_for_runs(None, pd.DataFrame({"x": [1]})).version == "v2"
    with pytest.raises(ConfigError, match="several anchors versions"):
        anchors_for_runs(None, pd.DataFrame({"anchors_version": ["v1", "v2"]}))
    with pytest.raises(ConfigError, match="--anchors"):
        anchors_for_runs(None, pd.DataFrame({"anchors_version": ["v9"]}))


def test_leaderboard_scores_a_v1_store_with_v1():
    from crsbench.stats.leaderboard import build_leaderboard
    from crsbench.testing import simulate_runs

    runs = simulate_runs(n_encoders=3, datasets=("isic2019",), seeds=2)
    assert set(runs["anchors_version"]) == {"v2"}  # the default now
    v1_runs = runs.assign(anchors_version="v1")
    b1 = build_leaderboard(v1_runs, n_replicates=0).set_index("encoder")
    b2 = build_leaderboard(runs, n_replicates=0).set_index("encoder")
    assert set(b1["anchors_version"]) == {"v1"} and set(b2["anchors_version"]) == {"v2"}
    assert not np.allclose(b1["CRS"], b2.loc[b1.index, "CRS"])
    forced = build_leaderboard(v1_runs, anchors="v2", n_replicates=0).set_index("encoder")
    np.testing.assert_allclose(forced["CRS"], b2.loc[forced.index, "CRS"])
