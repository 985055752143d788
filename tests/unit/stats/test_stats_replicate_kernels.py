"""The replicate kernels against the kernels they replaced (kept in
``crsbench.stats._reference_kernels`` and ``crsbench.stats._sparse_auroc``: bit for bit for
integer counts, to float64 rounding otherwise) and against sklearn's AUROC on the resampled
rows written out (duplicated) or weighted; ties, both class balances, masks, multiclass, small
blocks, int64 sums, replicates without a class."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from crsbench.stats import _reference_kernels as ref
from crsbench.stats import (
    _sparse_auroc,
    auroc_kernel,
    replicate_auroc,
    replicate_weights,
    weighted_metrics,
)
from crsbench.stats.resample import patient_index, resample_counts_for
from crsbench.stats.weighted_metrics import (
    ReplicateWeights,
    weighted_auroc_column,
    weighted_ece,
    weighted_macro_auroc,
    weighted_shrunk_ece,
)


def _weights(rng, n: int, n_rep: int, per_patient: int = 3):
    groups = rng.integers(0, max(n // per_patient, 2), n).astype(str)
    patients, inverse = patient_index(groups)
    counts = resample_counts_for("chexpert", len(patients), range(n_rep))
    return ReplicateWeights.of(counts, inverse), counts[:, inverse]


def _data(rng, n: int, labels: int, prevalence: float, decimals: int | None):
    y = (rng.random((n, labels)) < prevalence).astype(float)
    p = 1 / (1 + np.exp(-(1.2 * y + rng.standard_normal((n, labels)))))
    return y, (p if decimals is None else np.round(p, decimals))


@pytest.mark.parametrize(("prevalence", "decimals"), [(0.2, None), (0.3, 2), (0.7, 1), (0.5, 6)])
def test_auroc_is_bit_identical_to_the_previous_kernel_and_matches_sklearn(prevalence, decimals):
    rng = np.random.default_rng(int(prevalence * 10) + (decimals or 0))
    n, n_rep = 600, 70
    y, p = _data(rng, n, 3, prevalence, decimals)
    y[rng.random((n, 3)) < 0.1] = np.nan  # labelled rows differ per column
    rw, expanded = _weights(rng, n, n_rep)
    got = weighted_macro_auroc(y, p, "multilabel", rw)
    np.testing.assert_array_equal(got, ref.reference_macro_auroc(y, p, "multilabel", rw))
    columns = list(replicate_auroc._binary_columns(y, p, "multilabel"))
    np.testing.assert_array_equal(replicate_auroc.weighted_auroc_columns(columns, rw),
                                  _sparse_auroc.sparse_auroc_columns(columns, rw))  # fmt: skip
    for b in range(3):
        rows = np.repeat(np.arange(n), expanded[b])
        want = np.mean([roc_auc_score(y[rows, j][~np.isnan(y[rows, j])],
                                      p[rows, j][~np.isnan(y[rows, j])]) for j in range(3)])  # fmt: skip
        assert got[b] == pytest.approx(want, abs=1e-12)


def test_small_blocks_multiclass_and_the_sparse_kernels_int16_slots_stay_identical(monkeypatch):
    rng = np.random.default_rng(11)
    n = 500
    y, p = _data(rng, n, 2, 0.1, 2)
    monkeypatch.setattr(replicate_weights, "_MIN_BLOCK", 8)
    monkeypatch.setattr(replicate_weights, "_MAX_BLOCK", 8)
    rw, _ = _weights(rng, n, 37)
    np.testing.assert_array_equal(weighted_macro_auroc(y, p, "multilabel", rw),
                                  ref.reference_macro_auroc(y, p, "multilabel", rw))  # fmt: skip
    # the sparse reference: a slot may hold only a few rows (a rare class's segments split)
    monkeypatch.setattr(_sparse_auroc, "_INT16_MAX", 4 * int(rw.counts.max()))
    columns = list(replicate_auroc._binary_columns(y, p, "multilabel"))
    np.testing.assert_array_equal(_sparse_auroc.sparse_auroc_columns(columns, rw),
                                  replicate_auroc.weighted_auroc_columns(columns, rw))  # fmt: skip
    yc = rng.integers(0, 5, n)
    pc = np.round(rng.dirichlet(np.ones(5), n), 2)
    np.testing.assert_array_equal(weighted_macro_auroc(yc, pc, "multiclass", rw),
                                  ref.reference_macro_auroc(yc, pc, "multiclass", rw))  # fmt: skip


def test_float_and_int64_weights_and_missing_classes():
    rng = np.random.default_rng(12)
    n = 300
    y = (rng.random(n) < 0.4).astype(float)
    s = np.round(rng.random(n) + 0.3 * y, 2)
    w_float = rng.random((5, n)) * 3
    got = weighted_auroc_column(y, s, ReplicateWeights.of(w_float))
    for b in range(5):
        assert got[b] == pytest.approx(roc_auc_score(y, s, sample_weight=w_float[b]), abs=1e-12)
    big = np.full((2, n), 300)  # sums past int32: int64 throughout
    rw_big = ReplicateWeights.of(big)
    assert rw_big.sum_dtype is np.int64
    np.testing.assert_array_equal(weighted_auroc_column(y, s, rw_big),
                                  ref.reference_auroc_column(y, s, rw_big))  # fmt: skip
    only_neg = np.ones((3, n), dtype=int)
    only_neg[1, y == 1] = 0  # replicate 1 draws no positive
    out = weighted_auroc_column(y, s, ReplicateWeights.of(only_neg))
    assert np.isnan(out[1]) and out[0] == pytest.approx(roc_auc_score(y, s), abs=1e-12)


@pytest.mark.parametrize("task", ["multilabel", "multiclass"])
def test_ece_and_shrunk_ece_match_the_previous_kernel(task):
    rng = np.random.default_rng(13)
    n = 700
    if task == "multilabel":
        y, p = _data(rng, n, 10, 0.3, None)  # more columns than one matrix product takes
        y[rng.random((n, 10)) < 0.1] = np.nan
    else:
        y, p = rng.integers(0, 4, n), rng.dirichlet(np.ones(4), n)
    rw, _ = _weights(rng, n, 40)
    for new, old in ((weighted_ece, ref.reference_ece),
                     (weighted_shrunk_ece, ref.reference_shrunk_ece)):  # fmt: skip
        np.testing.assert_allclose(new(y, p, task, rw), old(y, p, task, rw), rtol=1e-12, atol=0)


@pytest.mark.parametrize("task", ["multilabel", "multiclass"])
def test_debiased_ece_in_blocks_of_replicates_matches_one_product_per_column(task, monkeypatch):
    from crsbench.stats import weighted_metrics

    rng = np.random.default_rng(17)
    n = 900
    if task == "multilabel":
        y, p = _data(rng, n, 11, 0.25, None)
        y[rng.random((n, 11)) < 0.15] = np.nan
    else:
        y, p = rng.integers(0, 5, n), rng.dirichlet(np.ones(5), n)
    rw, _ = _weights(rng, n, 57)
    expected = ref.reference_debiased_ece(y, p, task, rw)
    np.testing.assert_allclose(
        weighted_metrics.weighted_debiased_ece(y, p, task, rw), expected, rtol=1e-12, atol=0
    )
    monkeypatch.setattr(replicate_weights, "_MIN_BLOCK", 4)  # 15 blocks, the last of 1
    monkeypatch.setattr(replicate_weights, "_MAX_BLOCK", 4)
    assert rw.block_size == 4
    np.testing.assert_allclose(
        weighted_metrics.weighted_debiased_ece(y, p, task, rw), expected, rtol=1e-12, atol=0
    )


def test_the_test_set_as_drawn_takes_a_direct_path_bit_identical_to_the_replicate_kernel():
    """One replicate of unit weights (point estimates) skips the replicate plan; its value
    equals the plan kernel's to the last bit and sklearn's to 1e-12 (ties, both balances, a
    column with one class, patients of several images)."""
    rng = np.random.default_rng(7)
    for trial in range(400):
        n = int(rng.integers(2, 80))
        y = (rng.random(n) < rng.uniform(0.02, 0.98)).astype(float)
        s = rng.integers(0, 6, n).astype(float) if trial % 2 else rng.random(n)
        groups = rng.integers(0, max(n // 3, 1), n).astype(str)
        patients, inverse = patient_index(groups)
        w = ReplicateWeights.of(np.ones((1, len(patients)), dtype=np.int32), inverse)
        assert replicate_auroc._unit(w)
        fast = replicate_auroc.weighted_auroc_columns([(None, y, s)], w)[0, 0]
        order = replicate_auroc._column_order(y, s, w, None)
        sums = auroc_kernel.SumTypes.of(w.counts.dtype, w.top, len(y))
        slow = auroc_kernel.block_auroc(order, w.transposed(0, w.block_size), sums)[0]
        if 0 < y.sum() < n:
            assert fast == slow
            assert fast == pytest.approx(roc_auc_score(y, s), abs=1e-12)
        else:
            assert np.isnan(fast) and np.isnan(slow)
    twice = ReplicateWeights.of(np.full((1, 5), 2, dtype=np.int32))
    assert not replicate_auroc._unit(twice)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, bool])
def test_unsigned_and_boolean_scores_keep_their_order(dtype):
    """The kernels flip a column whose positives are the majority by negating its scores: an
    unsigned or boolean score must not wrap around (uint8 [0..4] gave 0.333 for an AUROC of 0)."""
    y = np.array([1, 1, 1, 0, 0, 1], dtype=float)
    s = np.array([0, 1, 0, 1, 1, 0]).astype(dtype) if dtype is bool else np.array(
        [0, 1, 2, 3, 4, 2], dtype=dtype)  # fmt: skip
    want = roc_auc_score(y, s.astype(float))
    for weights in (np.ones((1, 6), dtype=int), np.array([[1, 2, 0, 1, 1, 3]])):
        rw = ReplicateWeights.of(weights)
        got = weighted_auroc_column(y, s, rw)[0]
        ref_w = weighted_auroc_column(y, s.astype(float), rw)[0]
        assert got == ref_w
    assert weighted_auroc_column(y, s, ReplicateWeights.of(np.ones((1, 6), dtype=int)))[0] == (
        pytest.approx(want, abs=1e-12)
    )


def test_kept_column_orders_give_the_same_values_chunk_after_chunk_and_follow_the_patients():
    """A cell's bootstrap sorts each score column once for all its chunks of replicates
    (:class:`ColumnOrders`): every chunk's AUROCs equal a fresh sort's, bit for bit; the same
    arrays with other patients (another split's grouping) are sorted anew, not reused."""
    rng = np.random.default_rng(21)
    n = 400
    y, p = _data(rng, n, 4, 0.3, 2)
    y[rng.random((n, 4)) < 0.1] = np.nan
    kept = replicate_auroc.ColumnOrders()
    groups = rng.integers(0, 130, n).astype(str)
    patients, inverse = patient_index(groups)
    for chunk in (range(0, 40), range(40, 90)):
        counts = resample_counts_for("chexpert", len(patients), chunk)
        rw = ReplicateWeights.of(counts, inverse)
        got = weighted_macro_auroc(y, p, "multilabel", rw, kept)
        np.testing.assert_array_equal(got, weighted_macro_auroc(y, p, "multilabel", rw))
        np.testing.assert_array_equal(got, ref.reference_macro_auroc(y, p, "multilabel", rw))
    assert len(kept._entries) == 1 and kept.nbytes > 0
    other_patients, other_inverse = patient_index(rng.integers(0, 50, n).astype(str))
    counts = resample_counts_for("chexpert", len(other_patients), range(30))
    rw = ReplicateWeights.of(counts, other_inverse)
    np.testing.assert_array_equal(weighted_macro_auroc(y, p, "multilabel", rw, kept),
                                  ref.reference_macro_auroc(y, p, "multilabel", rw))  # fmt: skip
    p2 = p.copy()  # other memory: its own entry
    weighted_macro_auroc(y, p2, "multilabel", rw, kept)
    assert len(kept._entries) == 2


def test_numba_is_imported_only_when_a_replicate_auroc_is_computed():
    """Every command starts without numba (its import and compilation cost about 2 s); the
    kernel compiles on first use and writes nothing to disk (no cache: a read-only or full
    disk cannot fail it)."""
    import os
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(
        """
        import sys
        import numpy as np
        import crsbench.cli, crsbench.stats.patient_bootstrap, crsbench.stats.subgroups
        assert "numba" not in sys.modules
        from crsbench.stats.weighted_metrics import weighted_auroc_column
        y = np.array([0, 1, 0, 1, 1.0])
        out = weighted_auroc_column(y, np.array([0.1, 0.9, 0.4, 0.3, 0.8]), np.array([[1, 2, 0, 1, 1]]))
        assert "numba" in sys.modules
        print(out[0])
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "NUMBA_CACHE_DIR": "/nonexistent"})  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) == pytest.approx(roc_auc_score([0, 1, 1, 1], [0.1, 0.9, 0.3, 0.8],
                                                             sample_weight=[1, 2, 1, 1]))  # fmt: skip


@pytest.mark.parametrize(
    ("top", "n", "want"),
    [(3, 500, (np.int32, np.int32, 238_609)), (255, 400, (np.int32, np.int32, 41)),
     (255, 3_000, (np.int32, np.int32, 5)), (255, 5_000, (np.int32, np.int32, 3)),
     (255, 8_000, (np.int32, np.int32, 2)), (255, 20_000, (np.int32, np.int64, 0)),
     (3_000_000, 1_000, (np.int64, np.int64, 0))],
)  # fmt: skip
def test_the_kernels_integer_sums_cannot_overflow_and_stay_exact(top, n, want):
    """Weight sums in int32 while ``top · n`` fits; the midrank terms summed in int32 a few
    rows at a time (``flush_every``; 5, 3 and 2: not a multiple of the four rows a pass may
    read, or fewer) and added up in int64, or in int64 when not even one term fits: every
    path gives the reference kernel's values to the last bit."""
    sums = auroc_kernel.SumTypes.of(np.dtype(np.int64), top, n)
    assert (sums.weight, sums.part, sums.flush_every) == want
    rng = np.random.default_rng(top % 97 + n)
    n_eval = min(n, 600)
    y = (rng.random(n_eval) < 0.35).astype(float)
    s = np.round(rng.random(n_eval) + 0.3 * y, 2)
    counts = rng.integers(0, 4, (6, n_eval))
    counts[:, :5] = top  # the largest weight on a few rows of every replicate
    rw = ReplicateWeights.of(counts)
    order = replicate_auroc._column_order(y, s, rw, None)
    got = auroc_kernel.block_auroc(order, rw.transposed(0, 6), sums)
    np.testing.assert_array_equal(got, ref.reference_auroc_column(y, s, rw))


def test_ece_kernel_on_float_weights_and_unit_weights_matches_the_matrix_products():
    """The compiled per-(patient, bin) sums take float weights (rows' own weights) and the
    one replicate of unit weights (the point estimate) as they take bootstrap counts."""
    rng = np.random.default_rng(31)
    n = 500
    y, p = _data(rng, n, 5, 0.3, None)
    y[rng.random((n, 5)) < 0.1] = np.nan
    for w in (rng.random((7, n)) * 3, np.ones((1, n), dtype=int)):
        rw = ReplicateWeights.of(w)
        np.testing.assert_allclose(weighted_ece(y, p, "multilabel", rw),
                                   ref.reference_ece(y, p, "multilabel", rw), rtol=1e-12)  # fmt: skip
        np.testing.assert_allclose(weighted_shrunk_ece(y, p, "multilabel", rw),
                                   ref.reference_shrunk_ece(y, p, "multilabel", rw), rtol=1e-12)  # fmt: skip


@pytest.mark.parametrize("task", ["multilabel", "multiclass"])
def test_ece_kernel_matches_the_grouped_matrix_products_it_replaced(task):
    rng = np.random.default_rng(41)
    n = 800
    if task == "multilabel":
        y, p = _data(rng, n, 10, 0.3, None)  # 8 + 2 columns in the grouped products
        y[rng.random((n, 10)) < 0.1] = np.nan
    else:
        y, p = rng.integers(0, 4, n), rng.dirichlet(np.ones(4), n)
    rw, _ = _weights(rng, n, 45)
    both = np.stack([weighted_ece(y, p, task, rw), weighted_shrunk_ece(y, p, task, rw)])
    np.testing.assert_allclose(both, ref.grouped_ece(y, p, task, rw, (False, True)), rtol=1e-12)
    from crsbench.stats.weighted_metrics import weighted_debiased_ece

    np.testing.assert_allclose(weighted_debiased_ece(y, p, task, rw),
                               ref.grouped_debiased_ece(y, p, task, rw), rtol=1e-12)  # fmt: skip


def test_runs_of_one_class_read_four_rows_a_pass_and_stay_bit_identical():
    """The kernel reads four untied rows of one class in one pass (their integer weights
    summed first) and single rows, runs of ties and float weights one row at a time: on
    columns made of long runs of each class, short runs, ties at run edges and every weight
    type, it gives the reference kernel's values to the last bit (float weights: to float64
    rounding) and sklearn's on the duplicated rows."""
    rng = np.random.default_rng(57)
    for trial in range(120):
        n = int(rng.integers(5, 300))
        run = int(rng.integers(1, 12))  # class runs of about this length
        y = ((np.arange(n) // run + rng.integers(0, 2)) % 2).astype(float)
        y[rng.random(n) < rng.uniform(0, 0.3)] = rng.integers(0, 2)
        s = np.arange(n, dtype=float) + rng.normal(0, run / 3, n)
        if trial % 3 == 0:
            s = np.round(s / 4)  # ties, some across runs
        counts = rng.integers(0, 4, (int(rng.integers(1, 40)), n))
        w = counts.astype(float) + rng.random(counts.shape) if trial % 5 == 0 else counts
        rw = ReplicateWeights.of(w if trial % 7 else np.asarray(w, dtype=np.int64) * 300)
        if not 0 < y.sum() < n:
            continue
        got = weighted_auroc_column(y, s, rw)
        want = ref.reference_auroc_column(y, s, rw)
        if rw.counts.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=0)
        else:
            np.testing.assert_array_equal(got, want)
        rows = (
            np.repeat(np.arange(n), rw.counts[0].astype(int))
            if rw.counts.dtype.kind != "f"
            else None
        )
        if rows is not None and 0 < y[rows].sum() < len(rows):
            assert got[0] == pytest.approx(roc_auc_score(y[rows], s[rows]), abs=1e-12)


def test_midrank_sums_near_the_int32_limit_are_flushed_in_time():
    """8,000 rows all weighing 255 (the largest uint8 count), the smaller class on top: each
    of its rows adds about 1.04e9 to the int32 partial sum, so a third term before the flush
    would overflow it; the value stays exact (AUROC 1, and 0.5 for the tied copy)."""
    n = 8_000
    y = np.zeros(n)
    y[-40:] = 1
    s = np.arange(n, dtype=float)
    rw = ReplicateWeights.of(np.full((3, n), 255, dtype=np.uint8))
    sums = auroc_kernel.SumTypes.of(rw.counts.dtype, rw.top, n)
    assert (sums.part, sums.flush_every) == (np.int32, 2)
    np.testing.assert_array_equal(weighted_auroc_column(y, s, rw), np.ones(3))
    np.testing.assert_array_equal(weighted_auroc_column(y, s, rw),
                                  ref.reference_auroc_column(y, s, rw))  # fmt: skip
    flat = weighted_auroc_column(y, np.zeros(n), rw)  # one tie run: the other path
    np.testing.assert_array_equal(flat, np.full(3, 0.5))


@pytest.mark.parametrize("task", ["multilabel", "multiclass"])
def test_plug_in_and_debiased_ece_from_one_pass_equal_the_two_calls(task):
    """The subgroup analysis reads the plug-in ECE from the debiased ECE's per-bin sums: the
    same values as :func:`weighted_ece` to the last bit."""
    rng = np.random.default_rng(43)
    n = 700
    if task == "multilabel":
        y, p = _data(rng, n, 6, 0.3, None)
        y[rng.random((n, 6)) < 0.1] = np.nan
    else:
        p = rng.dirichlet(np.ones(4), n)
        y = rng.integers(0, 4, n).astype(float)
    rw, _ = _weights(rng, n, 90)
    both = weighted_metrics.weighted_ece_and_debiased(y, p, task, rw)
    assert both.shape == (2, 90)
    np.testing.assert_array_equal(both[0], weighted_ece(y, p, task, rw))
    np.testing.assert_array_equal(both[1], weighted_metrics.weighted_debiased_ece(y, p, task, rw))
    np.testing.assert_allclose(both[1], ref.reference_debiased_ece(y, p, task, rw), rtol=1e-12)
