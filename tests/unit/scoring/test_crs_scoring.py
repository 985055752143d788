"""CRS by hand, fixed vs cohort rules, dominance, anchors files, axes from runs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crsbench.core.errors import ConfigError, DataError, StoreError
from crsbench.scoring import (
    Anchors,
    AxisBound,
    DominanceCounter,
    axes_from_runs,
    crs_table,
    freeze_anchors,
    halton_panel,
    load_anchors,
    score_cells,
    seed_means,
)
from crsbench.scoring.dominance import cohort_dominance
from crsbench.store import load_runs
from crsbench.testing import simulate_runs, write_store

BOUNDS = {
    "auroc": AxisBound(0.5, 1.0),
    "ece": AxisBound(0.25, 0.0),
    "retention": AxisBound(0.5, 1.0),
    "robustness_drop": AxisBound(0.25, 0.0),
}
TWO_POINT = Anchors(
    version="test-2pt",
    bounds=BOUNDS,
    weights={"P": 0.60, "I": 0.25, "W": 0.15},
    panel=np.array([[0.5, 0.5, 0.5, 0.5], [0.9, 0.9, 0.9, 0.9]]),
)


@pytest.fixture(scope="module")
def runs() -> pd.DataFrame:
    return simulate_runs(seeds=3)


def test_crs_worked_by_hand_for_three_encoders():
    axes = pd.DataFrame(
        {
            "encoder": ["a", "b", "c"],
            "auroc": [0.9, 1.0, 0.75],
            "ece": [0.05, 0.0, 0.15],
            "retention": [0.9, 1.0, 0.6],
            "robustness_drop": [0.05, 0.0, 0.30],
        }
    )
    t = crs_table(axes, TWO_POINT).set_index("encoder")
    # a: u = ((0.9-0.5)/0.5, (0.25-0.05)/0.25, (0.9-0.5)/0.5, (0.25-0.05)/0.25) = (0.8,)*4.
    #    P: dominates (0.5,)*4 but not (0.9,)*4 -> 1/2.  I = 1 - sqrt(4 * 0.2^2)/2 = 0.8.
    #    W = 0.8.  CRS = 0.6*0.5 + 0.25*0.8 + 0.15*0.8 = 0.3 + 0.2 + 0.12 = 0.62.
    # b: u = (1,1,1,1): P = 2/2 = 1, I = 1, W = 1, CRS = 1.0.
    # c: u = (0.5, 0.4, 0.2, clip(-0.2) = 0): below 0.5 on ece -> P = 0.
    #    I = 1 - sqrt(0.5^2 + 0.6^2 + 0.8^2 + 1^2)/2 = 1 - sqrt(2.25)/2 = 0.25. W = 0.
    #    CRS = 0.25 * 0.25 = 0.0625.
    expected = {
        "a": (0.5, 0.8, 0.8, 0.62),
        "b": (1.0, 1.0, 1.0, 1.0),
        "c": (0.0, 0.25, 0.0, 0.0625),
    }
    for enc, (p, i, w, crs) in expected.items():
        assert t.loc[enc, ["P", "I", "W", "CRS"]].to_numpy() == pytest.approx([p, i, w, crs])
    assert t.loc["c", ["u_auroc", "u_ece", "u_retention", "u_robustness"]].to_numpy() == (
        pytest.approx([0.5, 0.4, 0.2, 0.0])
    )
    assert set(t["anchors_version"]) == {"test-2pt"}
    assert set(t["rule"]) == {"fixed"}


def test_equal_profile_is_not_dominated_and_weights_override():
    axes = pd.DataFrame(
        {
            "encoder": ["d"],
            "auroc": [0.75],
            "ece": [0.125],
            "retention": [0.75],
            "robustness_drop": [0.125],
        }  # fmt: skip
    )  # u = (0.5,)*4 equals the first panel point: weak dominance needs one strict axis
    t = crs_table(axes, TWO_POINT)
    assert t["P"].iloc[0] == 0.0
    t2 = crs_table(axes, TWO_POINT, weights={"P": 0.0, "I": 0.0, "W": 1.0})
    assert t2["CRS"].iloc[0] == pytest.approx(0.5)


def test_fixed_anchor_scores_do_not_move_when_encoders_are_inserted(runs):
    cells = seed_means(axes_from_runs(runs))
    base_enc = sorted(cells["encoder"].unique())[:12]
    base = cells[cells["encoder"].isin(base_enc)]
    for rule, moves in (("fixed", False), ("cohort", True)):
        before = crs_table(base, rule=rule).set_index(["encoder", "dataset"])["CRS"]
        after = crs_table(cells, rule=rule).set_index(["encoder", "dataset"])["CRS"]
        diff = (after.loc[before.index] - before).abs()
        if moves:
            assert diff.max() > 0.01
        else:
            assert diff.max() == 0.0


def test_bitmask_dominance_matches_brute_force_with_ties():
    rng = np.random.default_rng(3)
    panel = np.round(rng.uniform(size=(150, 4)), 1)  # many ties, 3 words of bits
    queries = np.round(rng.uniform(size=(400, 4)), 1)
    queries[:20] = panel[:20]  # exact copies: not dominated by themselves
    queries[5, 2] = np.nan
    got = DominanceCounter(panel).count(queries)
    le = (panel[None] <= queries[:, None]).all(-1)
    lt = (panel[None] < queries[:, None]).any(-1)
    brute = (le & lt).sum(1).astype(float)
    brute[5] = np.nan
    np.testing.assert_array_equal(got, brute)


def test_cohort_dominance_counts_other_members_only():
    u = np.array([[0.9, 0.9], [0.5, 0.5], [0.5, 0.5], [np.nan, 0.1]])
    np.testing.assert_allclose(cohort_dominance(u)[:3], [1.0, 0.0, 0.0])
    assert np.isnan(cohort_dominance(u)[3])


def test_shipped_anchors_v1():
    a = load_anchors("v1")  # reproducible by name after v2 became the default
    assert a.version == "v1" and a.weights == {"P": 0.6, "I": 0.25, "W": 0.15}
    np.testing.assert_allclose(a.panel, halton_panel(256), atol=1e-6)
    assert a.bounds["ece"].worst == 0.25 and a.bounds["auroc"].worst == 0.5


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.pop("bounds"), "'bounds' is missing"),
        (lambda d: d["weights"].update(P=0.7), "must sum to 1"),
        (lambda d: d["reference_panel"]["default"][2].__setitem__(1, 1.5), "row 3, column 2"),
    ],
)
def test_bad_anchors_file_names_file_and_key(tmp_path, edit, message):
    import yaml

    doc = load_anchors("v1").to_dict()  # a panel of rows to break
    edit(doc)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match=message) as err:
        load_anchors(path)
    assert "bad.yaml" in str(err.value)


def test_crs_table_rejects_missing_values():
    axes = pd.DataFrame(
        {
            "encoder": ["a", "b"],
            "auroc": [0.8, 0.9],
            "ece": [0.1, np.nan],
            "retention": [0.9, 0.9],
            "robustness_drop": [0.02, 0.03],
        }  # fmt: skip
    )
    with pytest.raises(DataError, match="row 2, column 'ece'"):
        crs_table(axes)
    with pytest.raises(DataError, match="retention"):
        crs_table(axes.drop(columns="retention"))
    with pytest.raises(ConfigError, match="rule"):
        crs_table(axes.dropna(), rule="minmax")


def test_axes_from_runs_matches_protocol_by_hand(runs):
    from crsbench.metrics import robustness_drop

    axes = axes_from_runs(runs).set_index(["encoder", "dataset", "seed"])
    main = runs[(runs.regime == "frozen") & (runs.probe == "logistic") & (runs.layer == 1.0)
                & (runs.recalibrator == "none") & (runs.encoder == "clip") & (runs.seed == 1)]  # fmt: skip
    cx = main[main.dataset == "chexpert"]
    clean = cx[(cx.condition == "clean") & (cx.eval_dataset == "chexpert")]
    full = clean[clean.fraction == 1.0].auroc.iloc[0]
    ratios = [clean[np.isclose(clean.fraction, f)].auroc.iloc[0] / full
              for f in (0.01, 0.05, 0.10, 0.25)]  # fmt: skip
    pert = cx[(cx.fraction == 1.0) & ~cx.condition.isin(["clean", "shift"])].auroc.to_numpy()
    shift = cx[cx.condition == "shift"].auroc.iloc[0]
    drops = full - np.append(pert, shift)
    row = axes.loc[("clip", "chexpert", 1)]
    assert len(pert) == 15 and row["n_conditions"] == 16
    assert row["auroc"] == pytest.approx(full)
    assert row["retention"] == pytest.approx(np.mean(ratios))
    assert row["robustness_drop"] == pytest.approx(0.5 * drops.mean() + 0.5 * drops.max())
    assert row["robustness_drop"] == pytest.approx(robustness_drop(full, list(pert), shift))
    no_shift = axes_from_runs(runs, include_shift=False).set_index(["encoder", "dataset", "seed"])
    d0 = full - pert
    assert no_shift.loc[("clip", "chexpert", 1), "robustness_drop"] == pytest.approx(
        0.5 * d0.mean() + 0.5 * d0.max()
    )
    # cells that do not exist are absent, never imputed
    assert ("biovil", "aptos2019") not in {k[:2] for k in axes.index}
    assert len(seed_means(axes.reset_index())) == 43


def test_store_roundtrip_freeze_and_errors(tmp_path, runs):
    with pytest.raises(StoreError, match="must exist"):
        load_runs(tmp_path / "nowhere")
    write_store(runs, tmp_path / "store")
    with pytest.raises(StoreError, match="must not exist"):
        write_store(runs, tmp_path / "store")
    loaded = load_runs(tmp_path / "store")
    assert len(loaded) == len(runs)
    frozen = freeze_anchors(tmp_path / "store", tmp_path / "v2.yaml", "v2")
    again = load_anchors(tmp_path / "v2.yaml")
    assert again.version == "v2" and sorted(again.panel_by_dataset) == sorted(runs.dataset.unique())
    assert again.panel_by_dataset["aptos2019"].shape == (13, 4)
    np.testing.assert_allclose(again.panel, frozen.panel, atol=1e-6)
    scored = score_cells(axes_from_runs(loaded), again)
    assert set(scored["anchors_version"]) == {"v2"}
    assert scored["P"].between(0, 1).all()
