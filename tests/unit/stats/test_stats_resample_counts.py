"""The bootstrap's resample counts: a pure function of (seed, stream, replicate), and their
narrow (uint8) form equal to the int32 one, widened when a count would not fit."""

from __future__ import annotations

import numpy as np
import pytest

from crsbench.stats import resample
from crsbench.stats.resample import resample_counts_for


def test_counts_are_a_pure_function_of_the_replicate_number():
    whole = resample_counts_for("chexpert", 500, range(40), seed=3)
    part = resample_counts_for("chexpert", 500, [7, 30], seed=3)
    assert np.array_equal(part, whole[[7, 30]])
    assert (whole.sum(axis=1) == 500).all()  # n draws of n items
    assert not np.array_equal(whole, resample_counts_for("isic2019", 500, range(40), seed=3))


def test_narrow_counts_equal_the_int32_counts_in_uint8():
    wide = resample_counts_for("chexpert", 2_000, range(60), seed=1)
    narrow = resample_counts_for("chexpert", 2_000, range(60), seed=1, narrow=True)
    assert wide.dtype == np.int32 and narrow.dtype == np.uint8
    assert np.array_equal(wide, narrow)


def test_narrow_counts_widen_when_a_count_does_not_fit(monkeypatch: pytest.MonkeyPatch):
    # with a ceiling of 2, some replicate draws an item 3 or more times: every row must
    # survive the widening (those drawn before it included)
    monkeypatch.setattr(resample, "_UINT8_MAX", 2)
    wide = resample_counts_for("x", 10, range(200))
    narrow = resample_counts_for("x", 10, range(200), narrow=True)
    assert int(wide.max()) > 2
    assert narrow.dtype == np.int32
    assert np.array_equal(wide, narrow)
