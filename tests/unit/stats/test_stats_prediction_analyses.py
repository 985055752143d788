"""Subgroups, operating-point transfer and prediction flips on planted predictions with
hand-worked values."""

from __future__ import annotations

import numpy as np
import pytest

from crsbench.stats.cell_predictions import CellPredictions, EvalSplit
from crsbench.stats.flips import (
    any_label_flip_share,
    flip_share,
    label_flip_shares,
    prediction_flips,
)
from crsbench.stats.operating_points import (
    operating_point_transfer,
    rates,
    sensitivity_lost,
    threshold_for_sensitivity,
    threshold_for_specificity,
)
from crsbench.stats.subgroup_resampling import age_band
from crsbench.stats.subgroups import TOO_SMALL, subgroup_analysis


def _binary(p1: np.ndarray) -> np.ndarray:
    return np.column_stack([1 - p1, p1])


def test_thresholds_hand_worked():
    y = np.array([1] * 10 + [0] * 10)
    s = np.r_[np.arange(1, 11) / 10, np.arange(0, 10) / 20]
    t = threshold_for_sensitivity(y, s, 0.9)
    assert t == pytest.approx(0.2)  # 9 of the 10 positives are >= 0.2
    assert rates(y, s, t)[0] == pytest.approx(0.9)
    ts = threshold_for_specificity(y, s, 0.9)  # negatives 0 .. 0.45: 9 below 0.4+
    assert rates(y, s, ts)[1] == pytest.approx(0.9)
    assert 0.4 < ts < 0.41


def _split(ds, y, groups=None, meta=None):
    g = np.asarray(groups if groups is not None else [f"{ds}{i}" for i in range(len(y))])
    return EvalSplit(ds, g.astype(str), np.asarray(y), metadata=meta or {})


def test_planted_threshold_transfer():
    # validation: positives 0.1..1.0 -> threshold 0.2 at sensitivity 0.9
    yv = np.array([1] * 10 + [0] * 10)
    pv = np.r_[np.arange(1, 11) / 10, np.full(10, 0.05)]
    # test keeps 9/10 positives above 0.2; the shift target only 6/10 (sensitivity lost 0.3)
    yt = yv.copy()
    pt = np.r_[np.full(9, 0.5), 0.1, np.full(10, 0.05)]
    ps = np.r_[np.full(6, 0.5), np.full(4, 0.1), np.full(10, 0.05)]
    cell = CellPredictions("enc", "src", "multiclass", _split("src", yt), (0,), _binary(pt),
                           shift=(_split("tgt", yt), _binary(ps)),
                           val=(_split("src", yv), _binary(pv)))  # fmt: skip
    table = operating_point_transfer({("enc", "src"): cell})
    sens = table[(table.target_kind == "sensitivity") & (table.label == "output 1")]
    got = dict(zip(sens.evaluated_on, sens.sensitivity, strict=True))
    assert got == pytest.approx({"test": 0.9, "tgt": 0.6})
    lost = sensitivity_lost(table, tolerance=0.05, min_positives=10)
    row = lost[lost.label == "output 1"].iloc[0]
    assert row.sensitivity_lost == pytest.approx(0.3) and row.n_positives == 10
    assert not row.keeps_operating_point
    assert sensitivity_lost(table, tolerance=0.5, min_positives=10)["keeps_operating_point"].all()
    # at the settings' minimum (40) 10 positives are too few: nothing decides
    few = sensitivity_lost(table, tolerance=0.05)
    assert set(few["status"]) == {"too few positives (10)"}
    assert few["keeps_operating_point"].isna().all()


def test_planted_flips_multiclass_and_multilabel():
    clean = np.eye(3)[[0, 1, 2, 0, 1, 2, 0, 1, 2, 0]] * 0.8 + 0.2 / 3
    pert = clean.copy()
    pert[[1, 4, 7]] = pert[[1, 4, 7]][:, [1, 0, 2]]  # three rows change class
    assert flip_share(clean, pert, "multiclass") == pytest.approx(0.3)
    ml_clean = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.6], [0.1, 0.1]])
    ml_pert = np.array([[0.9, 0.1], [0.2, 0.3], [0.4, 0.6], [0.1, 0.1]])
    # one of four decisions changes on each label: 0.25 of decisions; 2 of 4 images change
    assert flip_share(ml_clean, ml_pert, "multilabel", np.array([0.5, 0.5])) == 0.25
    assert any_label_flip_share(ml_clean, ml_pert, np.array([0.5, 0.5])) == 0.5
    assert flip_share(ml_clean, ml_pert, "multilabel", np.array([0.5, np.nan])) == 0.25
    np.testing.assert_array_equal(
        label_flip_shares(ml_clean, ml_pert, np.array([0.5, 0.3])), [0.25, 0.0]
    )  # label 1 at 0.3: 0.8/0.6 and 0.3/0.6 stay yes
    y = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 0])
    cell = CellPredictions("enc", "d", "multiclass", _split("d", y), (0,), clean,
                           conditions={("jpeg", 1): pert})  # fmt: skip
    row = prediction_flips({("enc", "d"): cell}).iloc[0]
    assert row.flip_share == pytest.approx(0.3)
    assert row.auroc_drop == pytest.approx(row.auroc_clean - row.auroc_perturbed)


def test_age_bands():
    assert age_band(np.array(["39", "40", "79", "80", ""])).tolist() == [
        "<40", "40-59", "60-79", "80+", ""]  # fmt: skip


def test_planted_subgroup_gap_and_too_small():
    # female rows ranked perfectly (AUROC 1); male rows ranked backwards (AUROC 0);
    # one "other"-site patient is below the minimum
    n = 20
    y = np.tile([0, 1], n)
    p1 = np.where(y == 1, 0.9, 0.1).astype(float)
    male = np.arange(2 * n) >= n
    p1[male] = np.where(y[male] == 1, 0.2, 0.7)
    sex = np.where(male, "male", "female")
    site = np.array(["trunk"] * (2 * n - 1) + ["palms"])
    groups = [f"p{i}" for i in range(2 * n)]
    split = _split("d", y, groups, {"sex": sex, "site": site})
    cell = CellPredictions("enc", "d", "multiclass", split, (0,), _binary(p1))
    res = subgroup_analysis({("enc", "d"): cell}, min_patients=2, n_replicates=50)
    sub, worst = res.subgroups, res.worst
    auc = sub.set_index(["attribute", "subgroup"])
    assert auc.loc[("sex", "female"), "auroc"] == pytest.approx(1.0)
    assert auc.loc[("sex", "male"), "auroc"] == pytest.approx(0.0)
    assert auc.loc[("site", "palms"), "status"] == TOO_SMALL
    assert np.isnan(auc.loc[("site", "palms"), "auroc"])
    w = worst[(worst.attribute == "sex") & (worst.metric == "auroc")].iloc[0]
    assert w.worst_subgroup == "male" and w.worst == pytest.approx(0.0)
    assert w.gap == pytest.approx(1.0)
    assert w.gap_lo <= 1.0 <= w.gap_hi + 1e-12
    site_rows = worst[worst.attribute == "site"]
    assert (site_rows["n_subgroups"] == 1).all()  # the too-small site never enters


def test_flip_share_is_one_scale_across_tasks():
    """A binary task read as 2 classes (argmax) or as one label at threshold 0.5 flips the
    same decisions; 14 copies of that label keep the share, while "any label" would not."""
    rng = np.random.default_rng(0)
    p1, q1 = rng.random(200), rng.random(200)
    two = np.column_stack([1 - p1, p1]), np.column_stack([1 - q1, q1])
    multiclass = flip_share(*two, "multiclass")
    assert flip_share(p1[:, None], q1[:, None], "multilabel", np.array([0.5])) == multiclass
    many = np.repeat(p1[:, None], 14, 1), np.repeat(q1[:, None], 14, 1)
    assert flip_share(*many, "multilabel", np.full(14, 0.5)) == pytest.approx(multiclass)
    independent = rng.random((200, 14)), rng.random((200, 14))
    shares = label_flip_shares(*independent, np.full(14, 0.5))
    assert flip_share(*independent, "multilabel", np.full(14, 0.5)) == pytest.approx(shares.mean())
    assert any_label_flip_share(*independent, np.full(14, 0.5)) > 0.99  # ~1 − 0.5**14


def test_multilabel_flips_have_one_row_per_label_and_the_decision_row():
    # validation: label 0 positives at 0.1..1.0 -> threshold 0.2; label 1 the same
    yv = np.column_stack([np.r_[np.ones(10), np.zeros(10)]] * 2)
    pv = np.column_stack([np.r_[np.arange(1, 11) / 10, np.full(10, 0.05)]] * 2)
    yt = np.column_stack([np.tile([1.0, 0.0], 10)] * 2)
    clean = np.column_stack([np.where(yt[:, 0] == 1, 0.9, 0.1)] * 2)
    pert = clean.copy()
    pert[:4, 0] = 0.15  # label 0: rows 0 (pos) and 2 (pos) drop below 0.2; 1, 3 stay no
    split = lambda y: EvalSplit("d", np.arange(len(y)).astype(str), y)  # noqa: E731
    cell = CellPredictions("enc", "d", "multilabel", split(yt), (0,), clean,
                           conditions={("jpeg", 1): pert}, val=(split(yv), pv),
                           label_names=("A", "B"))  # fmt: skip
    rows = prediction_flips({("enc", "d"): cell}).set_index("label")
    assert rows.loc["A", "flip_share"] == pytest.approx(2 / 20)
    assert rows.loc["B", "flip_share"] == 0.0 and rows.loc["B", "auroc_drop"] == 0.0
    assert rows.loc["all", "flip_share"] == pytest.approx(1 / 20)  # 2 of 40 decisions
    assert rows.loc["all", "any_label_flip_share"] == pytest.approx(2 / 20)
    assert rows.loc["A", "auroc_drop"] > 0
