"""Predictions held compact (float32 as stored) give every analysis the same numbers as float64.

A two-encoder store of the paper's plan at a tiny scale is written through the real writer
(continuous planted probabilities, stored float32 where lossless); the bootstrap, subgroups,
flips and operating points are computed from the store's predictions read both ways and must
agree exactly, and the compact cells must hold half the bytes.
"""

from __future__ import annotations

import importlib.util
from dataclasses import replace
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


def _mixed(cell):
    """The cell with one condition held as a read-only float64 array (a matrix the store
    keeps as float64 because float32 would change a metric) beside the float32 ones."""
    key = sorted(cell.conditions)[0]
    exact = np.array(cell.conditions[key], dtype=np.float64)
    exact.flags.writeable = False
    return replace(cell, conditions={**cell.conditions, key: exact})


def test_the_bootstrap_is_the_same_from_compact_predictions(both):
    from crsbench.stats.patient_bootstrap import patient_seed_bootstrap

    wide, compact = both
    keys = sorted(wide)
    a = patient_seed_bootstrap([wide[k] for k in keys], n_replicates=40, n_jobs=1)
    b = patient_seed_bootstrap([_mixed(compact[k]) for k in keys], n_replicates=40, n_jobs=2)
    pd.testing.assert_frame_equal(a.ranks, b.ranks, check_exact=True)
    pd.testing.assert_frame_equal(a.pairwise, b.pairwise, check_exact=True)
    for name in ("axes", "point_axes", "ece_shrunk", "point_ece_shrunk", "ece_reach"):
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name
    assert a.point_extras == b.point_extras
    assert a.extras.keys() == b.extras.keys()
    assert all(np.array_equal(a.extras[k], b.extras[k], equal_nan=True) for k in a.extras)


def test_a_blob_of_the_wrong_length_is_refused_with_its_sizes():
    from crsbench.core.errors import StoreError
    from crsbench.store.prediction_layout import stored_matrix

    blob = np.arange(6, dtype="<f4").tobytes()
    assert stored_matrix(blob, 2, 3).tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(StoreError, match=r"blob 1 must hold 2 x 4 values of <f4 \(32 bytes\)"):
        stored_matrix(blob, 2, 4, "blob 1")


def test_prediction_analyses_are_the_same_from_compact_predictions(both):
    from crsbench.stats.flips import prediction_flips
    from crsbench.stats.operating_point_loss import operating_point_tables
    from crsbench.stats.subgroups import subgroup_analysis

    wide, compact = both
    compact = {k: _mixed(c) for k, c in compact.items()}
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
