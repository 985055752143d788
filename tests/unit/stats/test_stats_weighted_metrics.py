"""Replicate-weighted AUROC and ECE: the sorted integer-cumsum AUROC against the reference
``auroc_batch`` and sklearn on expanded rows (ties, masks, patient counts, large sums), and the
debiased ECE against hand-worked values, a numerical integral and planted truth."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.stats import norm
from sklearn.metrics import roc_auc_score

from crsbench.core.errors import DataError
from crsbench.metrics import auroc_batch, expected_calibration_error
from crsbench.stats import replicate_weights
from crsbench.stats.resample import patient_index, resample_counts_for
from crsbench.stats.weighted_metrics import (
    ReplicateWeights,
    weighted_auroc_column,
    weighted_debiased_ece,
    weighted_ece,
    weighted_macro_auroc,
)
from crsbench.testing.planted import (
    PREVALENCE,
    PlantedEncoder,
    _probabilities,
    population_ece,
)


def _patient_weights(rng, n: int, n_rep: int):
    groups = rng.integers(0, max(n // 3, 2), n).astype(str)
    patients, inverse = patient_index(groups)
    counts = resample_counts_for("chexpert", len(patients), range(n_rep))
    return ReplicateWeights.of(counts, inverse), counts[:, inverse]


@pytest.mark.parametrize("decimals", [1, 2, 6])
def test_weighted_auroc_equals_reference_and_sklearn_with_ties(decimals):
    rng = np.random.default_rng(decimals)
    n = 240
    y = (rng.random(n) < 0.3).astype(float)
    s = np.round(0.4 * y + rng.random(n), decimals)  # coarse rounding: many ties
    rw, expanded = _patient_weights(rng, n, 30)
    got = weighted_auroc_column(y, s, rw)
    ref = auroc_batch(y, s, sample_weight=expanded.astype(float))
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)
    for b in range(5):
        rows = np.repeat(np.arange(n), expanded[b])
        assert got[b] == pytest.approx(roc_auc_score(y[rows], s[rows]), abs=1e-12)


def test_weighted_macro_auroc_masks_and_multiclass_match_the_reference():
    rng = np.random.default_rng(1)
    n = 200
    y = (rng.random((n, 3)) < 0.25).astype(float)
    y[rng.random((n, 3)) < 0.2] = np.nan
    p = np.round(rng.random((n, 3)) + 0.3 * np.nan_to_num(y), 2)
    rw, expanded = _patient_weights(rng, n, 20)
    want = []
    for j in range(3):
        m = ~np.isnan(y[:, j])
        want.append(auroc_batch(y[m, j], p[m, j], sample_weight=expanded[:, m].astype(float)))
    got = weighted_macro_auroc(y, p, "multilabel", rw)
    np.testing.assert_allclose(got, np.nanmean(want, axis=0), atol=1e-12)
    yc = rng.integers(0, 4, n)
    pc = rng.dirichlet(np.ones(4), n)
    want_c = np.mean([auroc_batch((yc == k).astype(float), pc[:, k],
                                  sample_weight=expanded.astype(float)) for k in range(4)],
                     axis=0)  # fmt: skip
    np.testing.assert_allclose(weighted_macro_auroc(yc, pc, "multiclass", rw), want_c, atol=1e-12)


def test_float_weights_and_sums_past_int32_stay_exact():
    rng = np.random.default_rng(2)
    n = 300
    y = (rng.random(n) < 0.5).astype(float)
    s = rng.random(n) + 0.3 * y
    w_float = rng.random((4, n)) * 3
    rw = ReplicateWeights.of(w_float)
    assert rw.sum_dtype is np.float64
    np.testing.assert_allclose(weighted_auroc_column(y, s, rw),
                               auroc_batch(y, s, sample_weight=w_float), atol=1e-12)  # fmt: skip
    big = np.full((2, n), 250)  # total 75,000 per replicate: W²/2 overflows int32
    rw_big = ReplicateWeights.of(big)
    assert rw_big.sum_dtype is np.int64
    np.testing.assert_allclose(weighted_auroc_column(y, s, rw_big),
                               auroc_batch(y, s), atol=1e-12)  # fmt: skip


def test_replicate_weights_reject_bad_input():
    with pytest.raises(DataError, match="non-negative"):
        ReplicateWeights.of(np.array([[1, -1]]))
    with pytest.raises(DataError, match=r"\(B, n\)"):
        ReplicateWeights.of(np.array([1, 2]))


def test_weighted_ece_with_patient_counts_equals_ece_on_expanded_rows():
    rng = np.random.default_rng(3)
    n = 150
    y = (rng.random((n, 2)) < 0.4).astype(float)
    y[rng.random((n, 2)) < 0.1] = np.nan
    p = rng.random((n, 2))
    rw, expanded = _patient_weights(rng, n, 6)
    got = weighted_ece(y, p, "multilabel", rw)
    for b in range(6):
        rows = np.repeat(np.arange(n), expanded[b])
        assert got[b] == pytest.approx(expected_calibration_error(y[rows], p[rows], "multilabel"))


def _mean_abs_normal_by_quadrature(mu: float, sd: float) -> float:
    f = lambda x: abs(x) * norm.pdf(x, mu, sd)  # noqa: E731
    return quad(f, mu - 12 * sd, mu + 12 * sd, points=[0.0], epsabs=1e-13)[0]


def test_debiased_ece_hand_worked_single_bin():
    # four rows in one bin, confidence 0.5, three hits: gap 0.25; gaps 0.5, 0.5, 0.5, -0.5
    conf = np.full(4, 0.5)
    acc = np.array([1.0, 1.0, 1.0, 0.0])
    sd = np.sqrt((3 * 0.25**2 + 0.75**2) / 16)  # one patient per row
    want = 2 * 0.25 - _mean_abs_normal_by_quadrature(0.25, sd)
    got = weighted_debiased_ece(acc[:, None], conf[:, None], "multilabel", np.ones((1, 4)))
    assert got[0] == pytest.approx(want, abs=1e-9)
    # rows 0 and 3 one patient: its summed gap 0.0 deviates by -0.5 from 2 × 0.25
    rw = ReplicateWeights.of(np.ones((1, 3), dtype=int), inverse=np.array([0, 1, 2, 0]))
    sd_c = np.sqrt((0.5**2 + 0.25**2 + 0.25**2) / 16)
    want_c = 2 * 0.25 - _mean_abs_normal_by_quadrature(0.25, sd_c)
    got_c = weighted_debiased_ece(acc[:, None], conf[:, None], "multilabel", rw)
    assert got_c[0] == pytest.approx(want_c, abs=1e-9)


def test_debiased_ece_is_closer_to_the_population_than_the_plug_in():
    rng = np.random.default_rng(4)
    planted = PlantedEncoder(1.5, 0.8, 0.2, (), (), 0.0)
    truth = population_ece(1.5, planted, n=400_000)
    plug, deb = [], []
    for _ in range(60):
        y = (rng.random(600) < PREVALENCE).astype(float)
        p = _probabilities(1.5 * y + rng.standard_normal(600), 1.5, planted)[:, None]
        ones = np.ones((1, 600), dtype=int)
        plug.append(weighted_ece(y[:, None], p, "multilabel", ones)[0])
        deb.append(weighted_debiased_ece(y[:, None], p, "multilabel", ones)[0])
    assert np.mean(plug) - truth > 0.005  # the plug-in's upward bias is real here
    assert abs(np.mean(deb) - truth) < 0.5 * (np.mean(plug) - truth)


def test_replicates_in_cache_sized_blocks_give_the_same_values(monkeypatch):
    rng = np.random.default_rng(6)
    n = 400
    y = (rng.random(n) < 0.3).astype(float)
    s = np.round(rng.random(n) + 0.2 * y, 2)
    monkeypatch.setattr(replicate_weights, "_MIN_BLOCK", 8)  # blocks of 8 replicates
    monkeypatch.setattr(replicate_weights, "_MAX_BLOCK", 8)
    rw, expanded = _patient_weights(rng, n, 27)
    assert rw.block_size == 8
    np.testing.assert_allclose(weighted_auroc_column(y, s, rw),
                               auroc_batch(y, s, sample_weight=expanded.astype(float)),
                               atol=1e-12)  # fmt: skip
