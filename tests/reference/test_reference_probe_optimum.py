"""At the protocol's tolerance the logistic probe sits at scikit-learn's exact optimum.

The protocol's budget is ``tol=1e-6`` (``crsbench.protocol.LOGISTIC_TOL``). The reference is scikit-learn's
``LogisticRegression`` at ``tol=1e-10`` on the same standardised features: its probabilities
are the exact optimum's to ~1e-6. The probe, in float64 and in float32 alike, must be within
1e-4 of them and must end by the gradient test (not by a stall).
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from crsbench.probes import LogisticProbe
from crsbench.protocol import LOGISTIC_TOL

PROTOCOL_TOL = LOGISTIC_TOL


@pytest.fixture(scope="module")
def five_class():
    """2,000 × 40, 5 classes (20 informative, 10 redundant features), fixed seed."""
    X, y = make_classification(
        n_samples=2000,
        n_features=40,
        n_informative=20,
        n_redundant=10,
        n_classes=5,
        n_clusters_per_class=1,
        random_state=0,
    )
    X = X * np.linspace(0.5, 3.0, 40) + 1.0  # unequal scales: the probe standardises
    Xs = StandardScaler().fit_transform(X)
    exact = LogisticRegression(C=1.0, tol=1e-10, max_iter=100_000).fit(Xs, y)
    return X, y, exact.predict_proba(Xs)


@pytest.fixture(scope="module")
def four_labels(five_class):
    """The same features, 4 sigmoid labels with 10 % of the targets masked (NaN)."""
    X = five_class[0]
    rng = np.random.default_rng(1)
    Xs = StandardScaler().fit_transform(X)
    Y = (Xs @ rng.normal(size=(40, 4)) * 0.3 + rng.normal(size=(len(X), 4)) > 0.3).astype(float)
    Y[rng.random(Y.shape) < 0.10] = np.nan
    exact = np.column_stack(
        [
            LogisticRegression(C=1.0, tol=1e-10, max_iter=100_000)
            .fit(Xs[m := ~np.isnan(Y[:, j])], Y[m, j])
            .predict_proba(Xs)[:, 1]
            for j in range(4)
        ]
    )
    return X, Y, exact


def test_protocol_tolerance_is_the_one_asked_about():
    assert PROTOCOL_TOL == 1e-6


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_multiclass_probabilities_within_1e4_of_exact_optimum(five_class, dtype):
    X, y, exact = five_class
    probe = LogisticProbe(C=1.0, tol=PROTOCOL_TOL, dtype=dtype).fit(X, y)
    assert probe.converged_, probe.fit_info_.flags
    assert probe.fit_info_.grad_norm[0] <= PROTOCOL_TOL
    assert np.abs(probe.predict_proba(X) - exact).max() <= 1e-4


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_multilabel_probabilities_within_1e4_of_exact_per_label_optimum(four_labels, dtype):
    X, Y, exact = four_labels
    probe = LogisticProbe(C=1.0, task="multilabel", tol=PROTOCOL_TOL, dtype=dtype).fit(X, Y)
    assert probe.converged_, probe.fit_info_.flags
    assert np.abs(probe.predict_proba(X) - exact).max() <= 1e-4


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_tight_tolerance_is_reached_not_stalled(five_class, dtype):
    """tol=1e-7 is reached in both dtypes (a float32-noise stall ended these fits at ~1.5e-6)."""
    X, y, exact = five_class
    probe = LogisticProbe(C=1.0, tol=1e-7, dtype=dtype).fit(X, y)
    assert probe.converged_, probe.fit_info_.flags
    assert probe.fit_info_.grad_norm[0] <= 1e-7
    assert np.abs(probe.predict_proba(X) - exact).max() <= 1e-5
