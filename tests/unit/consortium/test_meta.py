"""Random-effects pooling against independent references: statsmodels' ``combine_effects``
(DerSimonian–Laird, Hartung–Knapp) to 1e-9, R metafor's published BCG-vaccine values (REML and
DL, to their printed 4 decimals), scipy's maximum of the restricted likelihood, and a
hand-worked three-site case."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, stats
from statsmodels.stats.meta_analysis import combine_effects

from crsbench.consortium.meta import pool, reml_loglik, tau2_dl
from crsbench.core.errors import DataError

# dat.bcg (metafor): tpos, tneg, cpos, cneg of the 13 BCG vaccine trials.
BCG = np.array([
    [4, 119, 11, 128], [6, 300, 29, 274], [3, 228, 11, 209], [62, 13536, 248, 12619],
    [33, 5036, 47, 5761], [180, 1361, 372, 1079], [8, 2537, 10, 619], [505, 87886, 499, 87892],
    [29, 7470, 45, 7232], [17, 1699, 65, 1600], [186, 50448, 141, 27197], [5, 2493, 3, 2338],
    [27, 16886, 29, 17825],
], dtype=float)  # fmt: skip


def _bcg() -> tuple[np.ndarray, np.ndarray]:
    """Log risk ratios and their variances (metafor's escalc(measure="RR"))."""
    a, b, c, d = BCG.T
    y = np.log((a / (a + b)) / (c / (c + d)))
    v = 1 / a - 1 / (a + b) + 1 / c - 1 / (c + d)
    return y, v


@pytest.mark.parametrize("k", [3, 5, 12])
def test_dl_equals_statsmodels(k: int) -> None:
    rng = np.random.default_rng(k)
    y = 0.8 + rng.normal(0, 0.03, k) + rng.normal(0, 0.01, k)
    v = 0.09 / rng.integers(100, 2000, k)
    mine = pool(y, v, "dl")
    ref = combine_effects(y, v, method_re="chi2", use_t=True)
    assert mine.tau2 == pytest.approx(ref.tau2, abs=1e-12, rel=1e-9)
    assert mine.mean == pytest.approx(ref.mean_effect_re, abs=1e-12, rel=1e-9)
    assert mine.se == pytest.approx(ref.sd_eff_w_re, rel=1e-9)
    assert mine.q == pytest.approx(ref.q, rel=1e-9)
    assert mine.i2 == pytest.approx(max(ref.i2, 0.0), abs=1e-9)
    hksj = ref.conf_int(use_t=True)[3]  # statsmodels: random effects, HKSJ scale, t(k - 1)
    assert (mine.ci_low, mine.ci_high) == pytest.approx(tuple(hksj), abs=1e-9)


def test_reml_and_dl_match_metafor_bcg() -> None:
    y, v = _bcg()
    reml, dl = pool(y, v, "reml"), pool(y, v, "dl")
    # metafor: rma(yi, vi, data=dat) and rma(..., method="DL"), printed values
    assert reml.tau2 == pytest.approx(0.3132, abs=5e-5)
    assert reml.mean == pytest.approx(-0.7145, abs=5e-5)
    assert dl.tau2 == pytest.approx(0.3088, abs=5e-5)
    assert dl.mean == pytest.approx(-0.7141, abs=5e-5)
    assert dl.q == pytest.approx(152.2330, abs=5e-4)
    assert reml.i2 == pytest.approx(0.9222, abs=5e-5)
    assert dl.i2 == pytest.approx(0.9212, abs=5e-5)


def _reml_score(tau2: float, y: np.ndarray, v: np.ndarray) -> float:
    """d/d tau² of the restricted log-likelihood (Viechtbauer 2005, eq. 11), written out."""
    w = 1 / (v + tau2)
    mu = np.sum(w * y) / np.sum(w)
    return 0.5 * (np.sum(w**2 * (y - mu) ** 2) - np.sum(w) + np.sum(w**2) / np.sum(w))


@pytest.mark.parametrize("seed", range(4))
def test_reml_solves_the_restricted_likelihood(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    k = 4 + 2 * seed
    y, v = rng.normal(0.7, 0.05, k), 0.09 / rng.integers(100, 2000, k)
    got = pool(y, v, "reml")
    # an independent solver: the root of the score equation by Brent's method
    root = optimize.brentq(_reml_score, 0.0, 1.0, args=(y, v), xtol=1e-16, rtol=1e-15)
    assert got.tau2 == pytest.approx(root, rel=1e-9, abs=1e-13)
    w = 1 / (v + root)
    assert got.mean == pytest.approx(np.sum(w * y) / np.sum(w), abs=1e-12)
    # and it is the likelihood's maximum over tau² >= 0
    best = optimize.minimize_scalar(lambda t: -reml_loglik(t, y, v), bounds=(0, 1),
                                    method="bounded", options={"xatol": 1e-14})  # fmt: skip
    assert got.tau2 == pytest.approx(best.x, abs=1e-7)


def test_hand_worked_three_sites() -> None:
    # y = 0.70, 0.80, 0.90 with equal variances 0.001: Q = 20, C = 2000 - 1000 = ... by hand:
    # w = 1000 each; mean_fe = 0.8; Q = 1000 * (0.01 + 0 + 0.01) = 20; C = 3000 - 3e6/3000 = 2000
    # tau2_DL = (20 - 2) / 2000 = 0.009; w* = 1/0.01 = 100; mean = 0.8; se = 1/sqrt(300)
    y, v = np.array([0.7, 0.8, 0.9]), np.full(3, 0.001)
    p = pool(y, v, "dl")
    assert tau2_dl(y, v) == pytest.approx(0.009, abs=1e-15)
    assert p.mean == pytest.approx(0.8, abs=1e-15)
    assert p.se == pytest.approx(1 / np.sqrt(300), abs=1e-15)
    assert p.i2 == pytest.approx(0.9, abs=1e-12)  # (Q - 2) / Q = 18 / 20
    # HKSJ: sum w*(y - mean)^2 / ((k - 1) sum w*) = 100 * 0.02 / (2 * 300) = 1/300: se_hk = se
    half = stats.t.isf(0.025, 2) / np.sqrt(300)
    assert (p.ci_low, p.ci_high) == pytest.approx((0.8 - half, 0.8 + half), abs=1e-12)
    pi_half = stats.t.isf(0.025, 1) * np.sqrt(0.009 + 1 / 300)  # t with k - 2 = 1 df
    assert (p.pi_low, p.pi_high) == pytest.approx((0.8 - pi_half, 0.8 + pi_half), abs=1e-12)
    # equal variances: REML equals DL here (both solve the same moment equation)
    assert pool(y, v, "reml").tau2 == pytest.approx(0.009, abs=1e-12)


def test_two_sites_have_no_prediction_interval_and_bad_input_is_refused() -> None:
    p = pool([0.7, 0.8], [0.001, 0.002])
    assert np.isnan(p.pi_low) and np.isnan(p.pi_high) and np.isfinite(p.ci_low)
    with pytest.raises(DataError, match="at least two sites"):
        pool([0.7], [0.001])
    with pytest.raises(DataError, match="positive finite variances"):
        pool([0.7, 0.8], [0.001, 0.0])
    with pytest.raises(DataError, match="method must be one of"):
        pool([0.7, 0.8], [0.001, 0.002], "pm")


@pytest.mark.parametrize("method", ["reml", "dl"])
def test_vectorised_means_equal_pool(method: str) -> None:
    from crsbench.consortium.meta import pooled_means

    rng = np.random.default_rng(7)
    y, v = rng.normal(0.7, 0.05, (50, 6)), 0.09 / rng.integers(100, 2000, (50, 6))
    y[0] = 0.7  # identical sites: tau² = 0
    got = pooled_means(y, v, method)
    want = [pool(a, b, method).mean for a, b in zip(y, v, strict=True)]
    assert got == pytest.approx(want, abs=1e-12)
