"""drop_rows: quarantined training rows leave every subsample, the others keep membership."""

from __future__ import annotations

import numpy as np
import pytest

from crsbench.core.errors import DataError
from crsbench.probes import fit_probe_grid
from crsbench.splits import drop_rows, label_subsamples


def test_hand_worked_remap() -> None:
    subsets = {(0.5, 0): np.array([0, 2, 3]), (1.0, 0): np.arange(5)}
    kept = np.array([True, True, False, True, True])  # row 2 of the training split is bad
    out = drop_rows(subsets, kept)
    # old rows 0, 3 -> new positions 0, 2; old row 4 -> 3
    np.testing.assert_array_equal(out[(0.5, 0)], [0, 2])
    np.testing.assert_array_equal(out[(1.0, 0)], [0, 1, 2, 3])
    assert out[(0.5, 0)].dtype == np.int64 and not out[(0.5, 0)].flags.writeable


def test_membership_is_the_full_split_one_minus_the_dropped_rows() -> None:
    rng = np.random.default_rng(3)
    labels = np.eye(4)[rng.choice(4, 300, p=(0.6, 0.25, 0.1, 0.05))]
    train = np.sort(rng.choice(1000, 300, replace=False))  # dataset rows of the split
    subsets = label_subsamples(labels, "multiclass", (0.05, 0.25, 1.0), (0, 1, 2), key="k")
    kept = np.ones(300, dtype=bool)
    kept[[0, 17, 150, 299]] = False
    out = drop_rows(subsets, kept)
    dropped = set(train[~kept].tolist())
    for key, rows in subsets.items():
        assert set(train[kept][out[key]].tolist()) == set(train[rows].tolist()) - dropped
    for seed in (0, 1, 2):  # still nested
        a, b, c = (set(out[(f, seed)].tolist()) for f in (0.05, 0.25, 1.0))
        assert a <= b <= c


def test_a_class_left_without_positives_is_reported_by_the_probe_as_before() -> None:
    labels = np.eye(3)[[0, 1, 2, 0, 1, 0, 1, 0]]
    subsets = {(0.5, 0): np.array([0, 1, 2, 3])}
    kept = np.array([True, True, False, True, True, True, True, True])  # the only class-2 row
    out = drop_rows(subsets, kept)
    X = np.random.default_rng(0).normal(size=(8, 3))[kept]
    y = labels.argmax(1)[kept]
    fits = fit_probe_grid(X, y, X, y, "multiclass", Cs=np.array([1.0]), subsets=out,
                          n_outputs=3, max_iter=50)  # fmt: skip
    assert fits[(0.5, 0)].skipped == {2: "class absent from the training rows"}


def test_refusals_name_the_subsample() -> None:
    with pytest.raises(DataError, match=r"subsample \(0.5, 0\) must keep at least one row"):
        drop_rows({(0.5, 0): np.array([1])}, np.array([True, False]))
    with pytest.raises(DataError, match=r"indices must be in \[0, 2\)"):
        drop_rows({(0.5, 0): np.array([0, 2])}, np.array([True, False]))
