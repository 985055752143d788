"""label_subsamples: nested, stratified, min-positive guarantee, sizes, determinism."""

from __future__ import annotations

import hashlib
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from crsbench.core.errors import ConfigError, DataError
from crsbench.splits import check_nested, label_subsamples, subsample_size

FRACTIONS = (0.01, 0.05, 0.10, 0.25, 1.0)


def _multiclass(n=2000, seed=0, p=(0.5, 0.25, 0.15, 0.09, 0.01)):
    rng = np.random.default_rng(seed)
    return np.eye(len(p))[rng.choice(len(p), n, p=p)]


def _multilabel(n=1500, seed=0):
    rng = np.random.default_rng(seed)
    prev = np.array([0.4, 0.2, 0.1, 0.02])
    y = (rng.random((n, 4)) < prev).astype(float)
    y[rng.random((n, 4)) < 0.15] = np.nan
    y[:, 3] = 0.0
    y[17, 3] = 1.0  # a label with a single positive
    y[:, 2] = np.where(np.isnan(y[:, 2]), np.nan, 1.0)
    y[5, 2] = 0.0  # a label with a single negative
    return y


def _digest(subs):
    h = hashlib.sha256()
    for key in sorted(subs):
        h.update(repr(key).encode() + subs[key].tobytes())
    return h.hexdigest()


@pytest.mark.parametrize("task, maker", [("multiclass", _multiclass), ("multilabel", _multilabel)])
def test_nested_sizes_sorted(task, maker):
    y = maker()
    subs = label_subsamples(y, task, key="toy")
    assert set(subs) == {(f, s) for f in FRACTIONS for s in range(5)}
    check_nested(subs, y, task)
    n = len(y)
    for seed in range(5):
        for small, big in zip(FRACTIONS, FRACTIONS[1:], strict=False):
            assert set(subs[(small, seed)]) <= set(subs[(big, seed)])
        for f in FRACTIONS:
            rows = subs[(f, seed)]
            assert rows.dtype == np.int64 and np.all(np.diff(rows) > 0)
            assert len(rows) >= math.ceil(round(f * n, 9))
        assert len(subs[(1.0, seed)]) == n
        assert len(subs[(0.25, seed)]) == math.ceil(0.25 * n)


def test_size_formula():
    assert subsample_size(0.1, 30, 0) == 3  # 0.1 * 30 is 3.0000000000000004 in floats
    assert subsample_size(0.01, 150, 0) == 2
    assert subsample_size(0.01, 150, 5) == 5
    assert subsample_size(1.0, 7, 20) == 7


def test_multiclass_stratification_within_integer_rounding():
    y = _multiclass(n=3000, p=(0.4, 0.3, 0.2, 0.1))
    n_c = y.sum(0)
    subs = label_subsamples(y, "multiclass", seeds=(0, 1, 2))
    for (f, _seed), rows in subs.items():
        counts = y[rows].sum(0)
        ideal = len(rows) * n_c / len(y)
        assert np.all(np.abs(counts - ideal) <= 1.5), (f, counts, ideal)


def test_multilabel_prevalence_preserved():
    rng = np.random.default_rng(4)
    y = (rng.random((5000, 3)) < np.array([0.3, 0.1, 0.03])).astype(float)
    subs = label_subsamples(y, "multilabel", fractions=(0.05, 0.1, 0.25), seeds=(0,))
    for f in (0.05, 0.1, 0.25):
        prevalence = y[subs[(f, 0)]].mean(0)
        np.testing.assert_allclose(prevalence, y.mean(0), atol=0.012)


def test_rare_class_kept_at_one_percent():
    y = np.vstack([_multiclass(n=1000, p=(0.7, 0.2, 0.1, 0.0)), [[0.0, 0.0, 0.0, 1.0]]])
    # class 3 has one single example among 1001 rows
    subs = label_subsamples(y, "multiclass")
    for seed in range(5):
        rows = subs[(0.01, seed)]
        assert len(rows) == math.ceil(0.01 * len(y))
        assert (y[rows].sum(0) > 0).all()
        assert len(y) - 1 in rows


def test_multilabel_positive_and_negative_guarantee():
    y = _multilabel()
    subs = label_subsamples(y, "multilabel")
    for seed in range(5):
        rows = subs[(0.01, seed)]
        assert 17 in rows  # the only positive of label 4
        assert 5 in rows  # the only negative of label 3
        assert ((y[rows] == 1).any(0) | ~(y == 1).any(0)).all()


def test_deterministic_and_key_dependent():
    y = _multiclass()
    a = label_subsamples(y, "multiclass", key="isic2019")
    b = label_subsamples(y, "multiclass", key="isic2019")
    assert _digest(a) == _digest(b)
    c = label_subsamples(y, "multiclass", key="aptos2019")
    assert not np.array_equal(a[(0.1, 0)], c[(0.1, 0)])
    assert not np.array_equal(a[(0.1, 0)], a[(0.1, 1)])
    # the rows of a fraction do not depend on which other fractions were requested
    only = label_subsamples(y, "multiclass", fractions=(0.1,), seeds=(3,), key="isic2019")
    assert np.array_equal(only[(0.1, 3)], a[(0.1, 3)])


def test_determinism_across_processes():
    code = (
        "import hashlib, numpy as np; from crsbench.splits import label_subsamples;"
        "rng = np.random.default_rng(0);"
        "y = np.eye(5)[rng.choice(5, 2000, p=(0.5, 0.25, 0.15, 0.09, 0.01))];"
        "s = label_subsamples(y, 'multiclass', key='toy'); h = hashlib.sha256();"
        "[h.update(repr(k).encode() + s[k].tobytes()) for k in sorted(s)]; print(h.hexdigest())"
    )
    expected = _digest(label_subsamples(_multiclass(), "multiclass", key="toy"))
    env = {**os.environ, "PYTHONHASHSEED": "777"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == expected


def test_hand_worked_small_case():
    y = np.eye(2)[[0] * 7 + [1] * 3]
    subs = label_subsamples(y, "multiclass", fractions=(0.2, 0.5, 1.0), seeds=(0,))
    assert len(subs[(0.2, 0)]) == 2
    assert y[subs[(0.2, 0)]].sum(0).tolist() == [1.0, 1.0]  # one forced row per class
    counts = y[subs[(0.5, 0)]].sum(0)
    assert counts.sum() == 5 and counts[0] in (3, 4) and counts[1] in (1, 2)


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        ({"fractions": (0.0, 0.5)}, ConfigError, r"in \(0, 1\]"),
        ({"fractions": (0.5, 1.5)}, ConfigError, r"in \(0, 1\]"),
        ({"fractions": (float("nan"),)}, ConfigError, r"in \(0, 1\]"),
        ({"fractions": ()}, ConfigError, "at least one fraction"),
        ({"fractions": (0.1, 0.1)}, ConfigError, "distinct"),
        ({"seeds": ()}, ConfigError, "at least one seed"),
        ({"seeds": (-1,)}, ConfigError, "non-negative int"),
        ({"task": "binary"}, ConfigError, "task must be one of"),
    ],
)
def test_bad_config(kwargs, err, match):
    args = {"train_labels": _multiclass(n=100), "task": "multiclass", **kwargs}
    with pytest.raises(err, match=match):
        label_subsamples(**args)


def test_bad_labels():
    with pytest.raises(DataError, match="shape"):
        label_subsamples(np.array([0, 1, 2]), "multiclass")
    with pytest.raises(DataError, match="shape"):
        label_subsamples(np.zeros((0, 3)), "multilabel")
    with pytest.raises(DataError, match="row 2, column 1 must be 0, 1 or NaN"):
        label_subsamples(np.array([[1.0], [2.0]]), "multilabel")
    with pytest.raises(DataError, match="row 1 must be one-hot"):
        label_subsamples(np.array([[1.0, 1.0], [0.0, 1.0]]), "multiclass")


def test_check_nested_detects_violations():
    y = _multiclass(n=500)
    subs = dict(label_subsamples(y, "multiclass", seeds=(0,)))
    broken = dict(subs)
    broken[(0.05, 0)] = np.setdiff1d(subs[(0.05, 0)], subs[(0.01, 0)][:1])
    with pytest.raises(DataError, match="nested"):
        check_nested(broken)
    rare_class = int(np.argmin(y.sum(0)))
    without = dict(subs)
    keep = np.flatnonzero(y[:, rare_class] == 0)
    for key in subs:
        without[key] = np.intersect1d(subs[key], keep)
    with pytest.raises(DataError, match="must hold a positive"):
        check_nested(without, y, "multiclass")
