"""The batched CV selection equals fitting every (grid point, fold) calibrator one by one.

``fit_recalibrator(..., batched=False)`` is the reference: each candidate of the protocol's grid
fitted on each fold by the calibrator class itself (Dirichlet: scalar damped Newton, BFGS
fallback; vector scaling: scipy BFGS to a gradient of 1e-9). The batched path must give the
same out-of-fold probabilities (rtol 1e-7), the same per-fold fitted parameters, the same CV
losses, the same choices and the same recalibrated probabilities, on planted multi-class
(K = 2, 5, 8) and multi-label data with edge cases: a label with the minimum number of
positives, separable data (Newton does not settle: the BFGS fallback), NaN labels.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit, softmax
from sklearn.model_selection import StratifiedKFold

from crsbench.calibration import (
    DirichletCalibration,
    VectorScaling,
    fit_recalibrator,
    load_recal_protocol,
)
from crsbench.calibration.batched import oof_batched
from crsbench.calibration.selection import TIE_TOL, _oof_one_by_one, _Spec

PROTOCOL = load_recal_protocol()
CLASSES = {"dirichlet": DirichletCalibration, "vector": VectorScaling}
#: Out-of-fold agreement (rtol, atol). Dirichlet: both solvers are Newton to a gradient of
#: 1e-10 (measured: 4e-10 relative at most). Vector scaling: the reference's BFGS stops at a
#: gradient of 1e-9, which leaves up to 1.3e-8 absolute, 1.4e-7 relative on a held-out
#: probability above 1e-3 (1e-5 relative on 2e-5 with separable data and reg = 1e-4); the
#: batched Newton goes on to 1e-10 and reaches an objective at least as low (test below).
TOL = {"dirichlet": (1e-9, 0.0), "vector": (1e-7, 1e-9)}


def _multiclass(k: int, n: int, seed: int, separable: bool = False):
    """Over-confident logits (3 × a calibrated model's) of ``n`` rows, classes balanced."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % k
    if separable:
        return rng.normal(size=(n, k)) * 0.1 + 6.0 * np.eye(k)[y], y
    return 3.0 * (rng.normal(size=(n, k)) + 1.2 * np.eye(k)[y]), y


def _multilabel(n: int, seed: int):
    """Three labels: separable, exactly 15 positives (the minimum), 20 NaN rows."""
    rng = np.random.default_rng(seed)
    y = (rng.random((n, 3)) < 0.4).astype(float)
    z = 2.0 * (rng.normal(size=(n, 3)) + 1.5 * y - 0.75)
    z[:, 0] = np.where(y[:, 0] == 1, 2.0 + rng.random(n), -2.0 - rng.random(n))
    y[:, 1] = 0.0
    y[rng.choice(n, 15, replace=False), 1] = 1.0
    y[rng.choice(n, 20, replace=False), 2] = np.nan
    return z, y


def _problems():
    """(name, Z, y, task) of each single CV problem (multi-label: one label's rows)."""
    out = [(f"K={k}", *_multiclass(k, 25 * k, seed=k), "multiclass") for k in (2, 5, 8)]
    out.append(("separable K=3", *_multiclass(3, 90, seed=0, separable=True), "multiclass"))
    z, y = _multilabel(120, seed=1)
    for j, name in enumerate(("separable label", "15 positives", "NaN label")):
        m = ~np.isnan(y[:, j])
        out.append((name, z[m, j : j + 1], y[m, j : j + 1], "multilabel"))
    return out


PROBLEMS = _problems()


@pytest.mark.parametrize("method", ["dirichlet", "vector"])
@pytest.mark.parametrize("problem", PROBLEMS, ids=[p[0] for p in PROBLEMS])
def test_out_of_fold_probabilities_equal_one_by_one_fits(method, problem):
    _, Z, y, task = problem
    strata = y if task == "multiclass" else y[:, 0]
    folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(Z, strata))
    grid = PROTOCOL.grids[method]
    spec = _Spec("", CLASSES[method], grid, task, 5, 0)
    batched = oof_batched(method, grid, Z, y, task, folds)
    assert batched is not None and batched.shape == (len(grid), *Z.shape)
    for g, params in enumerate(grid):
        ref = _oof_one_by_one(spec, params, Z, y, folds)
        rtol, atol = TOL[method]
        np.testing.assert_allclose(batched[g], ref, rtol=rtol, atol=atol, err_msg=str(params))


@pytest.mark.parametrize("task", ["multiclass", "multilabel"])
def test_fitted_parameters_equal_the_calibrators(task, monkeypatch):
    """Per fold and grid point, the batched (scale, bias) and (W, b) are the calibrators'."""
    from crsbench.calibration import batched as mod

    Z, y = _multiclass(5, 125, seed=3) if task == "multiclass" else _multilabel(120, seed=2)
    if task == "multilabel":
        m = ~np.isnan(y[:, 2])
        Z, y = Z[m, 2:3], y[m, 2:3]
    strata = y if task == "multiclass" else y[:, 0]
    folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(Z, strata))
    mask = np.zeros((5, len(Z)))
    for f, (train, _) in enumerate(folds):
        mask[f, train] = 1.0
    regs = np.array([1e-4, 1.0])
    theta = mod._fit_vector(Z, y, mask, np.repeat(regs, 5), task, folds)
    X, Y = mod._dirichlet_design(Z, y, task)
    lam, mu = np.repeat([1e-3, 10.0], 5), np.repeat([1e-2, 1e-1], 5)
    wb = mod._fit_dirichlet(X, Y, mask, lam, mu, task)
    for i in range(10):
        train = folds[i % 5][0]
        v = VectorScaling(task, "logits", reg=float(regs[i // 5])).fit(Z[train], y[train])
        ref = np.r_[v.scale_, v.bias_]
        np.testing.assert_allclose(theta[i], ref, rtol=1e-6, atol=1e-6)
        f = _vector_objective(theta[i], Z[train], y[train], task, regs[i // 5])
        assert f <= _vector_objective(ref, Z[train], y[train], task, regs[i // 5]) + 1e-15
        d = DirichletCalibration(task, "logits", reg_lambda=lam[i], reg_mu=mu[i])
        d.fit(Z[train], y[train])
        W, b = d.weights_, d.intercepts_
        W, b = (W, b) if task == "multiclass" else (W[0], b[0])
        np.testing.assert_allclose(wb[i], np.column_stack([W, b]).ravel(), rtol=1e-8, atol=1e-9)


def _vector_objective(theta, Z, y, task, reg):
    """Vector scaling's penalised mean NLL, written out independently."""
    K = Z.shape[1]
    L = Z * theta[:K] + theta[K:]
    if task == "multiclass":
        P = softmax(L, axis=1)[np.arange(len(y)), y]
    else:
        P = np.where(y == 1, expit(L), expit(-L))
    return -np.log(P).mean() + 0.5 * reg * (((theta[:K] - 1) ** 2).sum() + (theta[K:] ** 2).sum())


def _choices(record):
    return [(r["choice"], r["params"]) for r in record.get("labels", [record])]


def _cv(record):
    return np.array(
        [[r["cv_nll_identity"], r["cv_nll_fitted"]] for r in record.get("labels", [record])]
    )


CASES = [("multiclass", *_multiclass(k, 25 * k, seed=10 + k)) for k in (2, 5, 8)]
CASES.append(("multilabel", *_multilabel(120, seed=4)))


@pytest.mark.parametrize("method", ["dirichlet", "vector"])
@pytest.mark.parametrize("case", CASES, ids=["K=2", "K=5", "K=8", "multilabel"])
def test_selection_equals_the_one_by_one_reference(method, case):
    task, Z, y = case
    ref = fit_recalibrator(method, Z, y, task, seed=0, input="logits", batched=False)
    new = fit_recalibrator(method, Z, y, task, seed=0, input="logits")
    assert _choices(new.record()) == _choices(ref.record())
    np.testing.assert_allclose(_cv(new.record()), _cv(ref.record()), rtol=0, atol=2e-9)
    test = np.random.default_rng(0).normal(size=(200, Z.shape[1])) * 4.0
    np.testing.assert_allclose(new.predict_proba(test), ref.predict_proba(test), rtol=1e-7)


def test_binary_dirichlet_ties_over_lambda_keep_the_first_grid_point():
    """With K = 2 the fit does not depend on λ: the λ candidates tie, the first λ is kept."""
    Z, y = _multiclass(2, 100, seed=0)
    fit = fit_recalibrator("dirichlet", Z, y, "multiclass", seed=0, input="logits")
    assert fit.record()["params"]["reg_lambda"] == PROTOCOL.grids["dirichlet"][0]["reg_lambda"]
    assert TIE_TOL == 1e-12


def test_other_methods_are_not_batched():
    Z, y = _multiclass(3, 60, seed=0)
    folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(Z, y))
    assert oof_batched("temperature", [{}], Z, y, "multiclass", folds) is None
    assert oof_batched("", [{}], Z, y, "multiclass", folds) is None


def test_single_class_fitting_rows_keep_the_identity_map():
    """A multi-label fold whose fitting rows hold one class: identity, as the calibrators."""
    z = np.linspace(-2, 2, 20)[:, None]
    y = np.zeros((20, 1))
    y[:2] = 1.0
    folds = [(np.arange(2, 20), np.arange(2)), (np.arange(20), np.arange(0))]
    for method, grid in (
        ("dirichlet", [{"reg_lambda": 1.0, "reg_mu": 1.0}]),
        ("vector", [{"reg": 1.0}]),
    ):
        oof = oof_batched(method, grid, z, y, "multilabel", folds)
        np.testing.assert_allclose(oof[0, :2], expit(z[:2]), rtol=1e-12)


def test_chunked_batches_give_the_same_answer(monkeypatch):
    """Problems solved a few at a time (large calibration splits) equal one batch."""
    from crsbench.calibration import batched as mod

    Z, y = _multiclass(5, 125, seed=5)
    folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(Z, y))
    for method in ("dirichlet", "vector"):
        grid = PROTOCOL.grids[method]
        whole = oof_batched(method, grid, Z, y, "multiclass", folds)
        monkeypatch.setattr(mod, "MAX_BATCH_ELEMENTS", 7 * 125 * 25)  # 7 problems a chunk
        chunked = oof_batched(method, grid, Z, y, "multiclass", folds)
        monkeypatch.undo()
        np.testing.assert_allclose(chunked, whole, rtol=1e-12)
