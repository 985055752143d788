"""One cell's bootstrap pass (:func:`cell_replicates`) gives the numbers of the previous two
passes: the axes of :func:`cell_replicate_axes` and, apart, the shrunk-world ECE of
:func:`cell_shrunk_ece`, each chunk of 1,000 replicates drawing its resample counts again."""

from __future__ import annotations

import numpy as np
import pytest

from crsbench.stats._reference_kernels import reference_two_pass_replicates
from crsbench.stats.cell_axes import (
    cell_replicates,
)
from crsbench.stats.cell_predictions import CellPredictions, EvalSplit
from crsbench.stats.resample import SEED_STREAM, resample_counts_for, row_weights
from crsbench.stats.weighted_metrics import (
    weighted_ece,
    weighted_ece_and_shrunk,
    weighted_shrunk_ece,
)
from crsbench.testing.planted import draw_world, planted_parameters


def _multiclass_cell(rng, n=150, k=4) -> CellPredictions:
    """Top-label ECE, per-seed fractions, JPEG and another condition, a shift target."""

    def split(name):
        return EvalSplit(name, np.repeat(np.arange(n // 2), 2).astype(str), rng.integers(0, k, n))

    def prob(*lead):
        return rng.dirichlet(np.ones(k), (*lead, n))

    fractions = {0.1: prob(3), 0.5: prob(3), 1.0: prob(3)}
    conditions = {("jpeg", 1): prob(), ("blur", 2): prob(3)}
    return CellPredictions("e09", "mc", "multiclass", split("mc"), (0, 1, 2), prob(), fractions,
                           conditions, (split("mc_target"), prob()))  # fmt: skip


@pytest.fixture(scope="module")
def cells():
    params = planted_parameters(2, ("chexpert", "isic2019"), np.random.default_rng(5))
    planted = draw_world(params, 90, 3, np.random.default_rng(6)).cells
    return [*planted, _multiclass_cell(np.random.default_rng(7))]


@pytest.mark.parametrize("chunk", [7, 2_000])
def test_one_pass_gives_the_two_passes_numbers(cells, chunk):
    ids = np.arange(40)
    sc = resample_counts_for(SEED_STREAM, 3, ids, seed=4)
    assert {c.task for c in cells} == {"multilabel", "multiclass"}
    assert any(c.shifts for c in cells)
    for cell in cells:
        got, want = (
            cell_replicates(cell, ids, sc, 4, chunk),
            reference_two_pass_replicates(cell, ids, sc, 4),
        )
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-14)
        assert got[2].keys() == want[2].keys() and len(got[2]) > 1
        for k in want[2]:
            np.testing.assert_allclose(got[2][k], want[2][k], rtol=1e-12, atol=1e-14)
        assert np.isfinite(got[1]).all() and (got[1] != got[0][:, 1]).any()


def test_joint_ece_is_the_plain_and_the_shrunk_ece_exactly(cells):
    for cell in cells:
        y, p = cell.test.y, cell.clean
        w = row_weights(cell.dataset, cell.test.groups, range(25))
        both = weighted_ece_and_shrunk(y, p, cell.task, w)
        assert both.shape == (25, 2)
        np.testing.assert_array_equal(both[:, 0], weighted_ece(y, p, cell.task, w))
        np.testing.assert_array_equal(both[:, 1], weighted_shrunk_ece(y, p, cell.task, w))
