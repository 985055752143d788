"""Operating points: the fewest positives per label (versioned settings), the basic bootstrap
interval of the sensitivity lost (checked against a loop over resampled rows and for coverage
on planted worlds), and which labels decide ``keeps_operating_point``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from crsbench.core.errors import ConfigError
from crsbench.stats.cell_predictions import CellPredictions, EvalSplit
from crsbench.stats.operating_point_loss import sensitivity_loss_intervals
from crsbench.stats.operating_point_settings import load_operating_point_settings
from crsbench.stats.operating_points import (
    operating_point_transfer,
    rates,
    sensitivity_lost,
    validation_thresholds,
)
from crsbench.stats.resample import patient_index, replicate_ids, resample_counts_for

RHO, PREV = 0.3, 0.3
MU_TEST, MU_SHIFT = 1.5, 1.0


def _split(rng, name: str, n_patients: int, mu: float, n_labels: int = 1, prev: float = PREV):
    """Patients with 1-2 images, a patient-level label per column, scores N(mu, 1) for
    positives and N(0, 1) for negatives (marginally), correlated within a patient."""
    per = rng.integers(1, 3, n_patients)
    groups = np.repeat(np.arange(n_patients), per)
    y_pat = (rng.random((n_patients, n_labels)) < prev).astype(float)
    u = rng.standard_normal((n_patients, n_labels))[groups]
    y = y_pat[groups]
    z = mu * y + np.sqrt(RHO) * u + np.sqrt(1 - RHO) * rng.standard_normal(y.shape)
    return EvalSplit(name, groups.astype(str), y), 1 / (1 + np.exp(-z))


def _cell(rng, n_test: int, n_val: int = 400, n_shift: int | None = None, n_labels: int = 1,
          prev: float = PREV):  # fmt: skip
    val = _split(rng, "val", n_val, MU_TEST, n_labels, prev)
    test = _split(rng, "test", n_test, MU_TEST, n_labels, prev)
    shift = _split(rng, "target", n_shift or n_test, MU_SHIFT, n_labels, prev)
    return CellPredictions("enc", "src", "multilabel", test[0], (0,), test[1], val=val,
                           extra_shifts=(shift,))  # fmt: skip


def test_the_settings_are_versioned_and_checked(tmp_path):
    s = load_operating_point_settings()
    assert (s.version, s.target_sensitivity, s.tolerance, s.min_positives) == ("v1", 0.9, 0.05, 40)
    bad = tmp_path / "op.yaml"
    bad.write_text("version: x\ntarget_sensitivity: 0.9\ntarget_specificity: 0.9\n"
                   "tolerance: 0.05\nmin_positives: 0\n")  # fmt: skip
    with pytest.raises(ConfigError, match="op.yaml: min_positives"):
        load_operating_point_settings(bad)


def test_interval_replicates_equal_a_loop_over_resampled_rows():
    rng = np.random.default_rng(1)
    cell = _cell(rng, 120)
    ci = sensitivity_loss_intervals({("enc", "src"): cell}, n_replicates=30, seed=4)
    thr = validation_thresholds(cell, "sensitivity", 0.9)[0, 0]
    losses = []
    for b in replicate_ids(30):
        sens = []
        for split, prob in ((cell.test, cell.clean), cell.extra_shifts[0]):
            _, inv = patient_index(split.groups)
            w = resample_counts_for(split.dataset, inv.max() + 1, np.array([b]), 4)[0][inv]
            rows = np.repeat(np.arange(len(inv)), w)  # each image as often as its patient
            sens.append(rates(split.y[rows, 0], prob[rows, 0], thr)[0])
        losses.append(sens[0] - sens[1])
    point = rates(cell.test.y[:, 0], cell.clean[:, 0], thr)[0] - rates(
        cell.extra_shifts[0][0].y[:, 0], cell.extra_shifts[0][1][:, 0], thr)[0]  # fmt: skip
    q_lo, q_hi = np.quantile(losses, [0.025, 0.975])
    r = ci.iloc[0]
    assert r["sensitivity_lost"] == pytest.approx(point, abs=1e-12)
    assert (r["lost_ci_low"], r["lost_ci_high"]) == pytest.approx(
        (2 * point - q_hi, 2 * point - q_lo), abs=1e-12)  # fmt: skip


def coverage(
    n_worlds: int, n_patients: int, n_replicates: int, seed: int, n_labels: int = 1,
    prev: float = PREV,
) -> float:  # fmt: skip
    """Share of planted intervals that hold the population loss at the picked threshold,
    Φ(μ_test − z) − Φ(μ_shift − z) (z the threshold on the logit scale); with ``n_labels`` > 1
    every label of a multi-label cell (resampled together) counts."""
    rng = np.random.default_rng(seed)
    hits = []
    for w in range(n_worlds):
        cell = _cell(rng, n_patients, n_labels=n_labels, prev=prev)
        tab = sensitivity_loss_intervals({("enc", "src"): cell}, n_replicates=n_replicates,
                                         seed=w)  # fmt: skip
        thresholds = validation_thresholds(cell, "sensitivity", 0.9)
        for j in range(n_labels):
            ci = tab.iloc[j]
            z = np.log(1 / thresholds[0, j] - 1) * -1
            truth = norm.cdf(MU_TEST - z) - norm.cdf(MU_SHIFT - z)
            hits.append(ci["lost_ci_low"] <= truth <= ci["lost_ci_high"])
    return float(np.mean(hits))


def test_reduced_coverage_on_planted_worlds():
    """150 worlds of 300 test and 300 target patients (about 130 positive images each),
    200 replicates; 2,000 worlds at 400 replicates gave 0.947 ± 0.005, and 1,000 worlds of 100
    patients (about 45 positive images) 0.944 ± 0.007 (docs/scoring.md, "Operating points")."""
    assert 0.88 <= coverage(150, 300, 200, seed=7) <= 0.99


def test_labels_below_the_minimum_are_named_and_do_not_decide():
    rng = np.random.default_rng(3)
    cell = _cell(rng, 300, n_labels=2)
    y = cell.extra_shifts[0][0].y.copy()
    y[np.flatnonzero(y[:, 1] == 1)[5:], 1] = 0  # label 1: 5 positive images on the target
    split = EvalSplit("target", cell.extra_shifts[0][0].groups, y)
    prob = cell.extra_shifts[0][1].copy()
    prob[y[:, 1] == 1, 1] = 0.0  # ... every one of them missed: a loss of ~0.9
    cell = CellPredictions("enc", "src", "multilabel", cell.test, (0,), cell.clean, val=cell.val,
                           extra_shifts=((split, prob),))  # fmt: skip
    table = operating_point_transfer({("enc", "src"): cell})
    ci = sensitivity_loss_intervals({("enc", "src"): cell}, n_replicates=50)
    lost = sensitivity_lost(table, tolerance=0.5, min_positives=40, intervals=ci)
    by = lost.set_index("label")
    assert by.loc["output 1", "status"] == "too few positives (5)"
    assert np.isnan(by.loc["output 1", "sensitivity_lost"]) and np.isnan(by.loc["output 1",
                                                                          "lost_ci_low"])  # fmt: skip
    assert by.loc["output 0", "status"] == "ok" and np.isfinite(by.loc["output 0", "lost_ci_low"])
    assert by["keeps_operating_point"].all()  # label 0's loss (~0.1) is within 0.5
    # with no minimum, the rare label decides
    assert not sensitivity_lost(table, tolerance=0.5, min_positives=1)[
        "keeps_operating_point"
    ].any()
    assert set(table["settings_version"]) == {"v1"}
    none = sensitivity_lost(table, tolerance=0.5, min_positives=10_000)
    assert none["keeps_operating_point"].isna().all() and isinstance(none, pd.DataFrame)


def test_cells_sharing_a_dataset_give_what_each_gives_alone():
    """The resample counts of a dataset are drawn once per chunk for every cell of it (the
    same for every encoder): each cell's rows equal its rows computed alone, to the last bit,
    per-seed test probabilities beside a target shared by the seeds included."""
    rng = np.random.default_rng(8)
    one = _cell(rng, 150, n_labels=2)
    two = _cell(np.random.default_rng(9), 150, n_labels=2)
    per_seed = np.stack([two.clean, np.clip(two.clean + 0.05, 0, 1)])
    two = CellPredictions("enc2", "src", "multilabel", two.test, (0, 1), per_seed, val=(
        two.val[0], np.stack([two.val[1], two.val[1]])), extra_shifts=two.extra_shifts)  # fmt: skip
    together = sensitivity_loss_intervals({("enc", "src"): one, ("enc2", "src"): two},
                                          n_replicates=1_500, seed=2)  # fmt: skip
    alone = pd.concat([sensitivity_loss_intervals({k: c}, n_replicates=1_500, seed=2)
                       for k, c in (("enc", one), ("enc2", two))], ignore_index=True)  # fmt: skip
    pd.testing.assert_frame_equal(together, alone, check_exact=True)
    assert set(together["encoder"]) == {"enc", "enc2"} and len(together) == 4


def test_float32_products_give_the_float64_tables_to_the_last_bit(monkeypatch):
    """The replicates' sums of counts × positives are integers: in float32 (below 2**24,
    where it is exact) they give the float64 products' tables exactly; above the bound the
    products stay in float64."""
    from crsbench.stats import operating_point_loss

    seen: list[type] = []
    real = operating_point_loss._sensitivities

    def recording(counts, sums):
        seen.append(counts.dtype.type)
        return real(counts, sums)

    monkeypatch.setattr(operating_point_loss, "_sensitivities", recording)
    cells = {("enc", "src"): _cell(np.random.default_rng(12), 300, n_labels=3)}
    fast = sensitivity_loss_intervals(cells, n_replicates=400, seed=3)
    assert set(seen) == {np.float32}
    seen.clear()
    monkeypatch.setattr(operating_point_loss, "_FLOAT32_EXACT", 0)
    exact = sensitivity_loss_intervals(cells, n_replicates=400, seed=3)
    assert set(seen) == {np.float64}
    pd.testing.assert_frame_equal(fast, exact, check_exact=True)
