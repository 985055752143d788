"""Metrics against scikit-learn and independent straightforward implementations."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score, roc_curve

from crsbench.metrics import (
    auroc_batch,
    brier_score,
    expected_calibration_error,
    macro_auroc,
    negative_log_likelihood,
    sensitivity_at_specificity,
)


def _ece_loop(conf, correct, n_bins=15):
    """Independent ECE: explicit loop over bins (a value on an inner edge goes to the upper bin)."""
    total = 0.0
    for b in range(n_bins):
        lo, hi = b / n_bins, (b + 1) / n_bins
        sel = [(c >= lo and (c < hi or (b == n_bins - 1 and c <= 1.0))) for c in conf]
        idx = [i for i, s in enumerate(sel) if s]
        if idx:
            acc = sum(correct[i] for i in idx) / len(idx)
            cf = sum(conf[i] for i in idx) / len(idx)
            total += len(idx) / len(conf) * abs(acc - cf)
    return total


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("tied", [False, True])
def test_macro_auroc_multiclass_equals_sklearn(seed, tied):
    rng = np.random.default_rng(seed)
    n, k = 700, 6
    y = rng.integers(0, k, n)
    P = rng.dirichlet(np.ones(k), n)
    if tied:
        P = np.round(P * 10) / 10 + 1e-9
        P /= P.sum(axis=1, keepdims=True)
    ours = macro_auroc(y, P, "multiclass")
    ref = np.mean([roc_auc_score(y == j, P[:, j]) for j in range(k)])
    assert abs(ours - ref) <= 1e-12
    if not tied:
        assert abs(ours - roc_auc_score(y, P, multi_class="ovr", average="macro")) <= 1e-12


@pytest.mark.parametrize("tied", [False, True])
def test_macro_auroc_multilabel_with_nan_equals_sklearn(tied):
    rng = np.random.default_rng(3)
    n, L = 500, 5
    S = rng.normal(size=(n, L))
    if tied:
        S = np.round(S, 1)
    Y = (rng.random((n, L)) < 0.3).astype(float)
    Y[rng.random((n, L)) < 0.2] = np.nan
    ref = np.mean(
        [roc_auc_score(Y[~np.isnan(Y[:, j]), j], S[~np.isnan(Y[:, j]), j]) for j in range(L)]
    )
    assert abs(macro_auroc(Y, S, "multilabel") - ref) <= 1e-12


def test_auroc_all_equal_scores_is_half_and_flagged():
    y = np.array([0, 1, 0, 1, 1])
    d = macro_auroc(np.c_[y], np.full((5, 1), 0.3), "multilabel", return_details=True)
    assert d.value == 0.5 and d.suspicious == (0,)


def test_auroc_extreme_imbalance_matches_sklearn():
    rng = np.random.default_rng(4)
    y = np.zeros(5000)
    y[[17, 4001]] = 1
    s = rng.normal(size=5000)
    assert abs(auroc_batch(y, s) - roc_auc_score(y, s)) <= 1e-12


def test_auroc_batch_columns_and_weights_match_sklearn():
    rng = np.random.default_rng(5)
    y = (rng.random(400) < 0.4).astype(float)
    S = np.round(rng.normal(size=(400, 3)), 1)
    np.testing.assert_allclose(
        auroc_batch(y, S), [roc_auc_score(y, S[:, j]) for j in range(3)], atol=1e-12
    )
    W = rng.poisson(1.0, size=(4, 400)).astype(float)
    got = auroc_batch(y, S, sample_weight=W)
    ref = [[roc_auc_score(y, S[:, j], sample_weight=w) for j in range(3)] for w in W]
    np.testing.assert_allclose(got, ref, atol=1e-12)


def test_ece_hand_worked_multiclass():
    # conf 0.9 right, 0.9 wrong -> bin 13: acc 0.5, conf 0.9 -> gap 0.4, weight 2/4;
    # conf 0.6 right, 0.6 right -> bin 9: acc 1.0, conf 0.6 -> gap 0.4, weight 2/4. ECE = 0.4.
    P = np.array([[0.9, 0.1], [0.9, 0.1], [0.4, 0.6], [0.4, 0.6]])
    y = np.array([0, 1, 1, 1])
    assert expected_calibration_error(y, P, "multiclass") == pytest.approx(0.4, abs=1e-12)


def test_ece_hand_worked_multilabel_masks_nan():
    # label 0: p=0.2 twice, both negative -> |0 - 0.2| = 0.2; label 1: p=0.7 (y=1), masked row.
    P = np.array([[0.2, 0.7], [0.2, 0.5]])
    Y = np.array([[0, 1], [0, np.nan]])
    assert expected_calibration_error(Y, P, "multilabel") == pytest.approx(
        (0.2 + 0.3) / 2, abs=1e-12
    )


@pytest.mark.parametrize("seed", [0, 1])
def test_ece_equals_independent_loop(seed):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(4) * 0.5, 600)
    y = rng.integers(0, 4, 600)
    conf = P.max(axis=1).tolist()
    correct = (P.argmax(axis=1) == y).astype(float).tolist()
    assert abs(expected_calibration_error(y, P, "multiclass") - _ece_loop(conf, correct)) <= 1e-12
    Y = (rng.random((600, 3)) < 0.3).astype(float)
    Pl = rng.random((600, 3))
    ref = np.mean([_ece_loop(Pl[:, j].tolist(), Y[:, j].tolist()) for j in range(3)])
    assert abs(expected_calibration_error(Y, Pl, "multilabel") - ref) <= 1e-12


def test_brier_and_nll_match_sklearn():
    rng = np.random.default_rng(6)
    P = rng.dirichlet(np.ones(3), 300)
    y = rng.integers(0, 3, 300)
    onehot = np.eye(3)[y]
    assert brier_score(y, P, "multiclass") == pytest.approx(
        np.mean(((P - onehot) ** 2).sum(1)), abs=1e-12
    )
    assert negative_log_likelihood(y, P, "multiclass") == pytest.approx(log_loss(y, P), abs=1e-12)
    Y = (rng.random((300, 2)) < 0.4).astype(float)
    Pl = rng.random((300, 2))
    ref_b = np.mean([brier_score_loss(Y[:, j], Pl[:, j]) for j in range(2)])
    ref_n = np.mean([log_loss(Y[:, j], Pl[:, j]) for j in range(2)])
    assert brier_score(Y, Pl, "multilabel") == pytest.approx(ref_b, abs=1e-12)
    assert negative_log_likelihood(Y, Pl, "multilabel") == pytest.approx(ref_n, abs=1e-12)


@pytest.mark.parametrize("spec", [0.90, 0.95])
def test_sensitivity_at_specificity_matches_roc_curve(spec):
    rng = np.random.default_rng(7)
    y = rng.integers(0, 3, 800)
    P = rng.dirichlet(np.ones(3), 800) + 0.3 * np.eye(3)[y]
    ref = []
    for j in range(3):
        fpr, tpr, _ = roc_curve(y == j, P[:, j], drop_intermediate=False)
        ref.append(tpr[fpr <= 1 - spec + 1e-12].max())
    assert sensitivity_at_specificity(y, P, "multiclass", spec) == pytest.approx(
        np.mean(ref), abs=1e-12
    )
