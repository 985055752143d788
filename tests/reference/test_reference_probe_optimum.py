"""Under the protocol's stopping rule the logistic probe sits at scikit-learn's exact optimum.

The protocol's rule is ``stop="probabilities"`` at ``tol=5e-7`` (``crsbench.protocol``): a
fit stops when the quasi-Newton step predicts no training row's probability to move by more
than 5e-7. The reference is scikit-learn's ``LogisticRegression`` at ``tol=1e-10`` on the same
standardised float64 features (its lbfgs then ends where float64 stalls: within ~1e-6 of the
probabilities of an exact Newton solve on these problems). Every fit, in float64 and in float32,
weak penalty (C = 100) and ill-conditioned (redundant features, well separated classes)
included, must be within 1e-5 of it on every training row; scikit-learn's own gradient test at
the same tolerance is not (up to 1.8e-4 here), which is why the rule changed.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from crsbench.probes import LogisticProbe
from crsbench.protocol import LOGISTIC_STOP, LOGISTIC_TOL

EXACT = 1e-5  # the largest difference from the optimum's probabilities a fit may have


def _features(class_sep: float) -> tuple[np.ndarray, np.ndarray]:
    """2,000 × 40, 5 classes (20 informative, 10 redundant features), fixed seed."""
    X, y = make_classification(
        n_samples=2000,
        n_features=40,
        n_informative=20,
        n_redundant=10,
        n_classes=5,
        n_clusters_per_class=1,
        class_sep=class_sep,
        random_state=0,
    )
    return X * np.linspace(0.5, 3.0, 40) + 1.0, y  # unequal scales: the probe standardises


@pytest.fixture(scope="module")
def optimum():
    """(class_sep, C) → (X, y, the optimum's training probabilities)."""
    out = {}
    for sep in (1.0, 2.0):
        X, y = _features(sep)
        Xs = StandardScaler().fit_transform(X)
        for C in (1.0, 100.0):
            exact = LogisticRegression(C=C, tol=1e-10, max_iter=100_000).fit(Xs, y)
            out[sep, C] = (X, y, exact.predict_proba(Xs))
    return out


def test_protocol_rule_is_the_one_asked_about():
    assert (LOGISTIC_STOP, LOGISTIC_TOL) == ("probabilities", 5e-7)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("C", [1.0, 100.0])
@pytest.mark.parametrize("sep", [1.0, 2.0])
def test_multiclass_probabilities_within_1e5_of_exact_optimum(optimum, sep, C, dtype):
    X, y, exact = optimum[sep, C]
    probe = LogisticProbe(C=C, tol=LOGISTIC_TOL, dtype=dtype).fit(X, y)
    assert probe.converged_, probe.fit_info_.flags
    assert np.abs(probe.predict_proba(X) - exact).max() <= EXACT


def test_the_gradient_test_at_the_same_tolerance_is_not_exact(optimum):
    """scikit-learn's test (gradient max-norm ≤ 1e-6) stops 1.8e-4 from the optimum here."""
    X, y, exact = optimum[2.0, 100.0]
    probe = LogisticProbe(C=100.0, tol=LOGISTIC_TOL, stop="gradient").fit(X, y)
    assert probe.converged_ and probe.fit_info_.grad_norm[0] <= LOGISTIC_TOL
    assert np.abs(probe.predict_proba(X) - exact).max() > 5 * EXACT


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("C", [1.0, 100.0])
def test_multilabel_probabilities_within_1e5_of_exact_per_label_optimum(C, dtype):
    X = _features(1.0)[0]
    rng = np.random.default_rng(1)
    Xs = StandardScaler().fit_transform(X)
    Y = (Xs @ rng.normal(size=(40, 4)) * 0.3 + rng.normal(size=(len(X), 4)) > 0.3).astype(float)
    Y[rng.random(Y.shape) < 0.10] = np.nan
    exact = np.column_stack(
        [
            LogisticRegression(C=C, tol=1e-10, max_iter=100_000)
            .fit(Xs[m := ~np.isnan(Y[:, j])], Y[m, j])
            .predict_proba(Xs)[:, 1]
            for j in range(4)
        ]
    )
    probe = LogisticProbe(C=C, task="multilabel", tol=LOGISTIC_TOL, dtype=dtype).fit(X, Y)
    assert probe.converged_, probe.fit_info_.flags
    assert np.abs(probe.predict_proba(X) - exact).max() <= EXACT


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_gradient_rule_still_reaches_a_tight_tolerance_without_stalling(optimum, dtype):
    """stop="gradient" at tol=1e-7 is reached in both dtypes (a float32-noise stall ended
    these fits at ~1.5e-6)."""
    X, y, exact = optimum[1.0, 1.0]
    probe = LogisticProbe(C=1.0, tol=1e-7, dtype=dtype, stop="gradient").fit(X, y)
    assert probe.converged_, probe.fit_info_.flags
    assert probe.fit_info_.grad_norm[0] <= 1e-7
    assert np.abs(probe.predict_proba(X) - exact).max() <= EXACT
