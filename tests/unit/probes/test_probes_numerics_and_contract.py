"""Probes: bad input, numerics edge cases, the batched grid, controls, estimator contract."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.neighbors import KNeighborsClassifier

from crsbench.core.errors import DataError, NotFittedError
from crsbench.metrics import macro_auroc
from crsbench.probes import KNNProbe, LogisticProbe, MLPProbe, fit_probe_grid


def _data(seed=0, n=400, d=12, k=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = ((X @ rng.normal(size=(d, k))) * 1.5 + rng.gumbel(size=(n, k))).argmax(1)
    return X, y


def test_nan_features_error_names_rows_and_columns():
    X, y = _data()
    X[[4, 9], 2] = np.nan
    X[9, 5] = np.inf
    with pytest.raises(DataError, match=r"2 rows and 2 columns.*\[5, 10\]"):
        LogisticProbe().fit(X, y)
    with pytest.raises(DataError, match="X_val"):
        Xc, _ = _data()
        fit_probe_grid(Xc, y, X, y, "multiclass", [1.0])


def test_wrong_shapes_and_bad_labels():
    X, y = _data()
    with pytest.raises(DataError, match="vector of 400"):
        LogisticProbe().fit(X, y[:-1])
    with pytest.raises(DataError, match="2-D"):
        LogisticProbe().fit(X[:, 0], y)
    bad = np.full((400, 2), 1.0)
    bad[3, 1] = -1
    with pytest.raises(DataError, match="row 4, column 2"):
        LogisticProbe(task="multilabel").fit(X, bad)
    probe = LogisticProbe().fit(X, y)
    with pytest.raises(DataError, match="12 feature columns"):
        probe.predict_proba(X[:, :5])


def test_bad_params_and_not_fitted():
    X, y = _data()
    for C in (0, -1.0, "a", np.nan):
        with pytest.raises(ValueError, match="C must be a positive float"):
            LogisticProbe(C=C).fit(X, y)
    with pytest.raises(ValueError, match="task must be one of"):
        LogisticProbe(task="binary").fit(X, y)
    for probe in (LogisticProbe(), MLPProbe(), KNNProbe()):
        with pytest.raises(NotFittedError, match="not fitted"):
            probe.predict_proba(X)
    assert clone(LogisticProbe(C=3.0)).get_params()["C"] == 3.0


def test_constant_and_duplicated_columns_do_not_change_the_fit():
    X, y = _data()
    base = LogisticProbe(C=0.3, tol=1e-9).fit(X, y).predict_proba(X)
    Xc = np.c_[X, np.full(len(X), 7.0)]
    p_const = LogisticProbe(C=0.3, tol=1e-9).fit(Xc, y)
    np.testing.assert_allclose(p_const.predict_proba(Xc), base, atol=1e-6)
    assert "1 constant feature columns" in p_const.fit_info_.flags
    all_const = LogisticProbe().fit(np.ones((50, 4)), np.arange(50) % 2)
    assert any("collapsed" in f for f in all_const.fit_info_.flags)
    # a duplicated column is a rotation of the penalty: the optimum predictions are unique
    Xd = np.c_[X, X[:, :1]]
    p_dup = LogisticProbe(C=0.3, tol=1e-9).fit(Xd, y).predict_proba(Xd)
    assert np.isfinite(p_dup).all() and macro_auroc(y, p_dup, "multiclass") > 0.7


def test_single_class_training_is_refused_or_skipped():
    X, _ = _data()
    with pytest.raises(DataError, match="needs >= 2 classes"):
        LogisticProbe(n_outputs=3).fit(X, np.zeros(400, dtype=int))
    res = fit_probe_grid(X, np.zeros(400, dtype=int), None, None, "multiclass", [1.0], n_outputs=3)
    assert res["all"].C_index == -1 and "needs >= 2 classes" in res["all"].skipped[-1]


def test_class_absent_from_small_subsample_gets_zero_probability():
    X, y = _data(n=1000)
    rows = np.flatnonzero(y != 2)[:10]
    res = fit_probe_grid(X, y, X, y, "multiclass", [0.1, 1.0], {"1%": rows})["1%"]
    P = res.predict_proba(X)
    assert P.shape == (1000, 3) and np.all(P[:, 2] == 0.0)
    assert res.skipped == {2: "class absent from the training rows"}
    np.testing.assert_allclose(P.sum(1), 1.0)


def test_all_nan_label_is_skipped_and_others_fit():
    X, y = _data()
    Y = np.c_[(y == 0), (y == 1), np.full(400, np.nan)].astype(float)
    probe = LogisticProbe(task="multilabel").fit(X, Y)
    assert 2 in probe.fit_info_.skipped
    P = probe.predict_proba(X)
    assert np.allclose(P[:, 2], 0.5) and macro_auroc(Y[:, :2], P[:, :2], "multilabel") > 0.8


def test_grid_selects_best_validation_auroc_and_shares_identical_subsets():
    X, y = _data(n=800)
    Xv, yv = _data(seed=1, n=300)
    Cs = np.logspace(-4, 2, 7)
    subsets = {(1.0, 0): np.arange(800), (1.0, 1): np.arange(800), (0.25, 0): np.arange(200)}
    res = fit_probe_grid(X, y, Xv, yv, "multiclass", Cs, subsets)
    for f in res.values():
        assert f.C_index == int(np.nanargmax(f.val_auroc))
        assert f.val_auroc[f.C_index] == pytest.approx(
            macro_auroc(yv, f.predict_proba(Xv), "multiclass")
        )
        assert f.converged.all() and f.coef.shape == (12, 3)
    assert res[(1.0, 0)].coef_path is res[(1.0, 1)].coef_path
    assert res[(1.0, 1)].key == (1.0, 1)
    # standardisation uses the subset's own rows: equal to a probe fitted on those rows alone
    single = LogisticProbe(C=Cs[3], dtype="float32").fit(X[:200], y[:200])
    np.testing.assert_allclose(
        res[(0.25, 0)].predict_proba(X, 3), single.predict_proba(X), atol=2e-3
    )


def test_grid_bad_subset_and_cs():
    X, y = _data()
    with pytest.raises(DataError, match="indices must be in"):
        fit_probe_grid(X, y, None, None, "multiclass", [1.0], {"s": np.array([0, 400])})
    with pytest.raises(ValueError, match="Cs must be"):
        fit_probe_grid(X, y, None, None, "multiclass", [0.0])


def test_knn_matches_sklearn_cosine_vote_shares():
    X, y = _data(n=300)
    Xq, _ = _data(seed=2, n=50)
    ours = KNNProbe(k=5).fit(X, y).predict_proba(Xq)
    mu, sd = X.mean(0), X.std(0)
    sk = KNeighborsClassifier(5, metric="cosine", algorithm="brute").fit((X - mu) / sd, y)
    np.testing.assert_allclose(ours, sk.predict_proba((Xq - mu) / sd), atol=1e-12)
    eu = KNNProbe(k=5, metric="euclidean").fit(X, y).predict_proba(Xq)
    sk_e = KNeighborsClassifier(5, algorithm="brute").fit((X - mu) / sd, y)
    np.testing.assert_allclose(eu, sk_e.predict_proba((Xq - mu) / sd), atol=1e-12)


def test_knn_multilabel_ignores_masked_neighbours():
    X = np.array([[0.0, 1.0], [0.0, 1.1], [5.0, 0.0], [5.0, 0.1]])
    Y = np.array([[1.0, np.nan], [0.0, 1.0], [0.0, 0.0], [1.0, 0.0]])
    P = KNNProbe(k=2, metric="euclidean", task="multilabel").fit(X, Y).predict_proba(X[:1])
    np.testing.assert_allclose(P, [[0.5, 1.0]])


def test_mlp_learns_is_deterministic_and_stops_early():
    X, y = _data(n=800)
    X, y, Xv, yv = X[:600], y[:600], X[600:], y[600:]
    a = MLPProbe(hidden_size=32, lr=0.01, epochs=200, patience=3, random_state=1).fit(X, y, Xv, yv)
    b = MLPProbe(hidden_size=32, lr=0.01, epochs=200, patience=3, random_state=1).fit(X, y, Xv, yv)
    np.testing.assert_array_equal(a.predict_proba(Xv), b.predict_proba(Xv))
    assert macro_auroc(yv, a.predict_proba(Xv), "multiclass") > 0.8
    assert a.n_epochs_ < 200 and a.best_epoch_ <= a.n_epochs_
    c = MLPProbe(hidden_size=32, epochs=5, random_state=2).fit(X, y, Xv, yv)
    assert not np.array_equal(c.predict_proba(Xv), a.predict_proba(Xv))
    Y = np.c_[(y == 0), (y == 1)].astype(float)
    Y[::7, 0] = np.nan
    m = MLPProbe(hidden_size=16, epochs=30, task="multilabel").fit(X, Y)
    assert m.predict_proba(X).shape == (600, 2)
