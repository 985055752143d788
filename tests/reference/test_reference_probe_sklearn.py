"""LogisticProbe against sklearn.linear_model.LogisticRegression at the same C."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from crsbench.metrics import macro_auroc
from crsbench.probes import LogisticProbe


def _data(seed=0, n=600, d=20, k=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) @ rng.normal(size=(d, d)) * 0.5 + 3.0
    logits = (X - X.mean(0)) @ rng.normal(size=(d, k)) * 0.3
    y = (logits + rng.gumbel(size=logits.shape)).argmax(1)
    return X, y


@pytest.mark.parametrize("C", [0.01, 1.0])
def test_multiclass_matches_sklearn(C):
    X, y = _data()
    probe = LogisticProbe(C=C, task="multiclass", tol=1e-9).fit(X, y)
    Xs = StandardScaler().fit_transform(X)
    sk = LogisticRegression(C=C, tol=1e-10, max_iter=10000).fit(Xs, y)
    P, Ps = probe.predict_proba(X), sk.predict_proba(Xs)
    assert np.abs(P - Ps).max() <= 1e-4
    assert abs(macro_auroc(y, P, "multiclass") - macro_auroc(y, Ps, "multiclass")) <= 1e-4
    np.testing.assert_allclose(P.sum(1), 1.0, atol=1e-12)


@pytest.mark.parametrize("C", [0.05, 2.0])
def test_multilabel_matches_sklearn_per_label(C):
    rng = np.random.default_rng(1)
    X, _ = _data(1)
    Y = (X - X.mean(0)) @ rng.normal(size=(X.shape[1], 3)) * 0.2 + rng.normal(
        size=(len(X), 3)
    ) > 0.5
    Y = Y.astype(float)
    Y[rng.random(Y.shape) < 0.15] = np.nan
    probe = LogisticProbe(C=C, task="multilabel", tol=1e-9).fit(X, Y)
    Xs = StandardScaler().fit_transform(X)
    P = probe.predict_proba(X)
    Ps = np.column_stack(
        [
            LogisticRegression(C=C, tol=1e-8, max_iter=10000)
            .fit(Xs[m := ~np.isnan(Y[:, j])], Y[m, j])
            .predict_proba(Xs)[:, 1]
            for j in range(3)
        ]
    )
    assert np.abs(P - Ps).max() <= 1e-4
    assert abs(macro_auroc(Y, P, "multilabel") - macro_auroc(Y, Ps, "multilabel")) <= 1e-4


def test_more_features_than_rows_matches_sklearn():
    X, y = _data(2, n=60, d=100, k=3)
    probe = LogisticProbe(C=0.5, tol=1e-9).fit(X, y)
    Xs = StandardScaler().fit_transform(X)
    sk = LogisticRegression(C=0.5, tol=1e-10, max_iter=10000).fit(Xs, y)
    assert np.abs(probe.predict_proba(X) - sk.predict_proba(Xs)).max() <= 1e-4
