"""The CRS weight sweep (first-place shares that are areas on the simplex, computed by hand)
and the Pareto front of the four axes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crsbench.core.errors import ConfigError
from crsbench.stats.weight_sensitivity import (
    pareto_front,
    sample_weights,
    weight_sensitivity,
    weight_sweep,
)

N = 200_000
TOL = 0.005  # > 5 standard errors of a share near 0.5 with N draws


def _board(rows: dict[str, tuple[float, float, float]]) -> pd.DataFrame:
    return pd.DataFrame([{"encoder": e, "P": p, "I": i, "W": w} for e, (p, i, w) in rows.items()])


def test_simplex_draws_are_uniform() -> None:
    w = sample_weights(N, np.random.default_rng(1))
    assert np.allclose(w.sum(axis=1), 1.0) and (w >= 0).all()
    # uniform on the simplex: each weight is Beta(1, 2), P(w > t) = (1 - t)^2
    assert (w[:, 0] > 0.6).mean() == pytest.approx(0.16, abs=TOL)
    assert w.mean(axis=0) == pytest.approx([1 / 3] * 3, abs=TOL)


def test_near_default_draws_stay_in_the_box_unclipped() -> None:
    d = {"P": 0.60, "I": 0.25, "W": 0.15}
    w = sample_weights(50_000, np.random.default_rng(2), near=d, radius=0.1)
    assert np.allclose(w.sum(axis=1), 1.0)
    assert (np.abs(w - [0.60, 0.25, 0.15]) <= 0.1 + 1e-12).all()
    # the region is a hexagon centrally symmetric about the defaults: mean = defaults
    assert w.mean(axis=0) == pytest.approx([0.60, 0.25, 0.15], abs=0.002)
    with pytest.raises(ConfigError, match="radius"):
        sample_weights(10, np.random.default_rng(0), near=d, radius=0.0)


def test_share_is_the_area_where_the_linear_difference_is_positive() -> None:
    # CRS_a - CRS_b = wP - 0.6 (wP + wI + wW) = wP - 0.6: a is first iff wP > 0.6.
    board = _board({"a": (1.0, 0.0, 0.0), "b": (0.6, 0.6, 0.6)})
    simplex = weight_sweep(board, sample_weights(N, np.random.default_rng(3)))
    share = dict(zip(simplex["encoder"], simplex["share_first"], strict=True))
    assert share["a"] == pytest.approx((1 - 0.6) ** 2, abs=TOL)  # 0.16, area of {wP > 0.6}
    assert share["a"] + share["b"] == pytest.approx(1.0)
    # near the defaults wP > 0.6 is exactly half of the hexagon (symmetric about wP = 0.6)
    near = sample_weights(N, np.random.default_rng(4), near={"P": 0.6, "I": 0.25, "W": 0.15})
    assert weight_sweep(board, near).set_index("encoder").loc["a", "share_first"] == (
        pytest.approx(0.5, abs=TOL))  # fmt: skip


def test_corners_share_thirds_and_rank_ranges() -> None:
    board = _board({"p_only": (1, 0, 0), "i_only": (0, 1, 0), "w_only": (0, 0, 1),
                    "weak": (0.1, 0.1, 0.1)})  # fmt: skip
    table, head = weight_sensitivity(board, n_samples=N, seed=5)
    simplex = table[table["region"] == "simplex"].set_index("encoder")
    for e in ("p_only", "i_only", "w_only"):  # by symmetry each corner wins a third
        assert simplex.loc[e, "share_first"] == pytest.approx(1 / 3, abs=TOL)
        assert (simplex.loc[e, "rank_best"], simplex.loc[e, "rank_worst"]) == (1, 4)
    # "weak" scores 0.1, below max(w) >= 1/3: never first; second when two weights are
    # below 0.1, last when none is
    assert (simplex.loc["weak", "share_first"], simplex.loc["weak", "rank_best"],
            simplex.loc["weak", "rank_worst"]) == (0.0, 2, 4)  # fmt: skip
    assert sorted(head["simplex"]["ever_first"]) == ["i_only", "p_only", "w_only"]
    # within ±0.1 of 0.60/0.25/0.15, wP >= 0.5 > wI, wW: P's corner always wins
    assert head["near_default"]["ever_first"] == ["p_only"]
    near = table[table["region"] == "near_default"].set_index("encoder")
    assert near.loc["p_only", "share_first"] == 1.0
    assert near.loc["p_only", ["crs_min", "crs_max"]].tolist() == pytest.approx(
        [0.5, 0.7], abs=0.01
    )
    assert head["default_leader"] == "p_only"


def test_pareto_front_by_hand() -> None:
    board = pd.DataFrame({
        "encoder": ["a", "b", "c", "d"],
        "auroc": [0.90, 0.85, 0.80, 0.90],
        "ece": [0.05, 0.03, 0.06, 0.05],
        "retention": [0.95, 0.95, 0.90, 0.95],
        "robustness_drop": [0.02, 0.04, 0.05, 0.03],
    })  # fmt: skip
    front = pareto_front(board).set_index("encoder")
    # a vs b: a better AUROC and drop, b better ECE: neither dominates. c is worse than a
    # everywhere; d equals a but for a larger drop: dominated by a only.
    assert front["on_front"].to_dict() == {"a": True, "b": True, "c": False, "d": False}
    assert front.loc["c", "dominated_by"] == "a, b, d"
    assert front.loc["d", "dominated_by"] == "a"


def test_sweep_on_a_store_agrees_with_the_leaderboard(planted_store) -> None:
    from crsbench.stats.leaderboard import build_leaderboard

    runs = planted_store(["resnet50", "vit_b16", "clip", "siglip"], 2,
                         lambda df, mask: None, datasets=("isic2019", "chexpert"))  # fmt: skip
    board = build_leaderboard(runs, n_replicates=0)
    table, head = weight_sensitivity(board, n_samples=2_000, seed=0)
    assert head["default_leader"] == board["encoder"].iloc[0]
    # the sweep's CRS at a sampled weighting is w · (mean P, I, W): the board's own CRS at the
    # default weights lies inside every encoder's near-default CRS range
    near = table[table["region"] == "near_default"].set_index("encoder")
    for e, crs in zip(board["encoder"], board["CRS"], strict=True):
        assert near.loc[e, "crs_min"] - 1e-9 <= crs <= near.loc[e, "crs_max"] + 1e-9


def test_analyze_writes_the_new_tables(planted_store, tmp_path) -> None:
    import json

    from crsbench.stats import run_analyses

    runs = planted_store(["rad_dino", "biovil", "resnet50", "mae"], 2, lambda df, mask: None)
    summary = run_analyses(runs, tmp_path / "a", n_replicates=50)
    for name in ("contamination_flags", "shift_welch_without_flagged",
                 "external_validity_shift_without_flagged", "weight_sensitivity",
                 "pareto_front", "at_a_glance"):  # fmt: skip
        assert (tmp_path / "a" / f"{name}.csv").is_file(), summary["skipped"].get(name)
    head = json.loads((tmp_path / "a" / "summary.json").read_text())["analyses"]
    assert head["contamination_flags"]["flagged_cells"] == ["rad_dino/chexpert (trained_on)"]
    board = pd.read_csv(tmp_path / "a" / "leaderboard.csv").set_index("encoder")
    assert board.loc["biovil", "pretraining_overlap"] == "shift target mimic_cxr (trained on)"


def test_ranking_with_weights_by_hand_on_all_and_on_fewer_axes() -> None:
    """Two encoders, one cell each, utilities worked out by hand (bounds 0.5–1 / 0.25–0)."""
    from crsbench.stats.weight_sensitivity import ranking_with_weights

    cells = pd.DataFrame({"encoder": ["a", "b"], "dataset": ["isic2019"] * 2,
                          "auroc": [1.0, 0.75], "ece": [0.125, 0.0],
                          "retention": [1.0, 1.0], "robustness_drop": [0.0, 0.0]})  # fmt: skip
    # u(a) = (1, .5, 1, 1), u(b) = (.5, 1, 1, 1): P = .5, I = 1 - .5/2, W = .5 for both
    w = {"P": 0.2, "I": 0.5, "W": 0.3}
    full = ranking_with_weights(cells, w, anchors="v2")
    assert np.allclose(full["CRS"], 0.2 * 0.5 + 0.5 * 0.75 + 0.3 * 0.5)
    assert full["rank"].tolist() == [1, 1]  # a tie shares the best rank
    # without ECE: a = (1, 1, 1) is ideal, b = (.5, 1, 1): P .5, I 1 - .5/sqrt(3), W .5
    fewer = ranking_with_weights(cells, w, anchors="v2",
                                 axes=("auroc", "retention", "robustness_drop"))  # fmt: skip
    assert fewer["encoder"].tolist() == ["a", "b"]
    b = 0.2 * 0.5 + 0.5 * (1 - 0.5 / np.sqrt(3)) + 0.3 * 0.5
    assert np.allclose(fewer["CRS"], [1.0, b])
    with pytest.raises(ConfigError, match="exact uniform reference"):
        ranking_with_weights(cells, w, anchors="v1", axes=("auroc", "ece"))
