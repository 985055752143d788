"""Predictions held compact (float32 as stored) give every analysis the same numbers as float64.

A two-encoder store of the paper's plan at a tiny scale is written through the real writer
(continuous planted probabilities, stored float32 where lossless); the bootstrap, subgroups,
flips and operating points are computed from the store's predictions read both ways and must
agree exactly, and the compact cells must hold half the bytes.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "paper_scale.py"


def _planned_frame(n_encoders: int):
    spec = importlib.util.spec_from_file_location("paper_scale_benchmark", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.planned_frame(n_encoders)


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    from crsbench.stats.store_predictions import load_store_predictions
    from crsbench.testing.planned_store import write_planned_store

    planned, cards, plan = _planned_frame(2)
    store = tmp_path_factory.mktemp("compact") / "store"
    write_planned_store(store, planned, cards, scale=0.004, plan=plan)
    cells = sorted(set(zip(planned["encoder"], planned["dataset"], strict=True)))
    wide = load_store_predictions(store, cells, range(5))
    compact = load_store_predictions(store, cells, range(5), compact=True)
    assert not wide.missing and set(wide.cells) == set(compact.cells) == set(cells)
    return wide.cells, compact.cells


def _nbytes(cells) -> int:
    seen: dict[int, int] = {}
    for cell in cells.values():
        seen.update({id(a): a.nbytes for a in cell.probability_arrays()})
    return sum(seen.values())


def test_compact_cells_hold_the_stored_float32_and_widen_to_the_float64_values(both):
    wide, compact = both
    dtypes = {a.dtype for c in compact.values() for a in c.probability_arrays()}
    assert np.dtype(np.float32) in dtypes
    assert _nbytes(compact) <= 0.55 * _nbytes(wide)
    for key, cell in compact.items():
        widened = cell.widened()
        for a, b in zip(widened.probability_arrays(), wide[key].probability_arrays(), strict=True):
            assert a.dtype == np.float64 and np.array_equal(a, b)
        assert widened.widened() is widened  # already float64: no copy
    shared = next(iter(compact.values()))
    with pytest.raises(ValueError):  # a view of the bytes read: never written through
        shared.clean[..., 0] = 0.5


def test_the_bootstrap_is_the_same_from_compact_predictions(both):
    from crsbench.stats.patient_bootstrap import patient_seed_bootstrap

    wide, compact = both
    keys = sorted(wide)
    a = patient_seed_bootstrap([wide[k] for k in keys], n_replicates=40, n_jobs=1)
    b = patient_seed_bootstrap([compact[k] for k in keys], n_replicates=40, n_jobs=2)
    pd.testing.assert_frame_equal(a.ranks, b.ranks, check_exact=True)
    pd.testing.assert_frame_equal(a.pairwise, b.pairwise, check_exact=True)
    assert np.array_equal(a.axes, b.axes, equal_nan=True)
    assert np.array_equal(a.point_axes, b.point_axes, equal_nan=True)
    assert np.array_equal(a.ece_shrunk, b.ece_shrunk, equal_nan=True)


def test_prediction_analyses_are_the_same_from_compact_predictions(both):
    from crsbench.stats.flips import prediction_flips
    from crsbench.stats.operating_point_loss import operating_point_tables
    from crsbench.stats.subgroups import subgroup_analysis

    wide, compact = both
    a = subgroup_analysis(wide, n_replicates=20, n_permutations=19)
    b = subgroup_analysis(compact, n_replicates=20, n_permutations=19, n_jobs=2)
    pd.testing.assert_frame_equal(a.subgroups, b.subgroups, check_exact=True)
    pd.testing.assert_frame_equal(a.worst, b.worst, check_exact=True)
    pd.testing.assert_frame_equal(prediction_flips(wide), prediction_flips(compact),
                                  check_exact=True)  # fmt: skip
    for x, y in zip(operating_point_tables(wide, 30), operating_point_tables(compact, 30),
                    strict=True):  # fmt: skip
        assert not x.empty
        pd.testing.assert_frame_equal(x, y, check_exact=True)
