"""The test-set bootstrap's groups of cells: each chunk's resample counts drawn once per split
for every cell of a group, each cell's numbers its own whatever group it is in, and groups that
keep every worker busy within a memory bound."""

from __future__ import annotations

import numpy as np
import pytest

from crsbench.stats import cell_shares, replicate_values
from crsbench.stats.cell_axes import cell_replicates, group_replicates
from crsbench.stats.cell_shares import group_shares, share_groups
from crsbench.stats.patient_bootstrap import patient_seed_bootstrap
from crsbench.stats.resample import SEED_STREAM, resample_counts_for
from crsbench.testing.planted import draw_world, planted_parameters


@pytest.fixture(scope="module")
def world():
    params = planted_parameters(3, ("chexpert", "isic2019"), np.random.default_rng(15))
    return draw_world(params, 80, 3, np.random.default_rng(16))


def test_a_group_gives_each_cell_its_own_numbers_bit_for_bit(world):
    ids = np.arange(30)
    sc = resample_counts_for(SEED_STREAM, 3, ids, seed=2)
    together = group_replicates(world.cells, ids, sc, 2, chunk=11)
    for cell, (axes, shrunk, extras) in zip(world.cells, together, strict=True):
        alone = cell_replicates(cell, ids, sc, 2, chunk=11)
        np.testing.assert_array_equal(axes, alone[0])
        np.testing.assert_array_equal(shrunk, alone[1])
        assert extras.keys() == alone[2].keys()
        for k in extras:
            np.testing.assert_array_equal(extras[k], alone[2][k])


def test_a_groups_chunk_draws_each_splits_counts_once(world, monkeypatch):
    drawn: list[str] = []
    real = replicate_values.resample_counts_for

    def counting(stream, *args, **kwargs):
        drawn.append(stream)
        return real(stream, *args, **kwargs)

    monkeypatch.setattr(replicate_values, "resample_counts_for", counting)
    ids = np.arange(30)
    sc = resample_counts_for(SEED_STREAM, 3, ids)
    chexpert = [c for c in world.cells if c.dataset == "chexpert"]
    splits = {c.test.dataset for c in chexpert} | {s.dataset for c in chexpert for s, _ in
                                                   (*c.shifts, *c.extra_shifts)}  # fmt: skip
    shares = group_shares(chexpert, ids, sc, chunk=10)
    assert len(chexpert) == 3 and len(shares) == 3
    assert sorted(drawn) == sorted([*splits] * 3)  # once per split and chunk, not per cell
    assert all(s.point_axes.shape == (1, 4) and np.isfinite(s.point_ece_shrunk) for s in shares)


def test_groups_split_each_dataset_for_every_worker_and_within_the_memory_bound(monkeypatch):
    sizes = [50, 10, 40, 30, 20, 5, 5]
    datasets = ["a", "a", "a", "a", "b", "b", "b"]
    one = share_groups(sizes, datasets, 1)
    assert sorted(map(sorted, one)) == [[0, 1, 2, 3], [4, 5, 6]]  # one group per dataset
    two = share_groups(sizes, datasets, 2)
    assert sorted(i for g in two for i in g) == list(range(7))
    assert all(len({datasets[i] for i in g}) == 1 for g in two)
    loads = [sum(sizes[i] for i in g) for g in two]
    assert loads == sorted(loads, reverse=True)  # the largest task first
    assert loads[:2] == [70, 60]  # dataset a: 50+10 and 40+30 (balanced)
    monkeypatch.setattr(cell_shares, "GROUP_BYTES", 13 * 60)  # 60 elements a group
    capped = share_groups(sizes, datasets, 1)
    assert all(sum(sizes[i] for i in g) <= 60 for g in capped if len(g) > 1)
    assert len([g for g in capped if datasets[g[0]] == "a"]) == 3  # 130 elements: 50, 40, 40
    evenly = share_groups(sizes, datasets, 2)  # 130 elements, two workers: 4 groups, not 3
    assert len([g for g in evenly if datasets[g[0]] == "a"]) == 4
    monkeypatch.setattr(cell_shares, "GROUP_BYTES", 13 * 45)  # 50 alone; 40 + 10 is above
    alone = share_groups(sizes, datasets, 1)
    assert all(sum(sizes[i] for i in g) <= 45 for g in alone if len(g) > 1)
    assert len(share_groups([30, 30, 30], ["a"] * 3, 1)) == 3  # 2 groups would hold 60
    assert share_groups([7], ["x"], 4) == [[0]]


def test_the_bootstrap_is_the_same_in_one_process_and_in_groups_across_workers(world):
    one = patient_seed_bootstrap(world.cells, n_replicates=50, seed=3, chunk=16, n_jobs=1)
    two = patient_seed_bootstrap(world.cells, n_replicates=50, seed=3, chunk=16, n_jobs=2)
    np.testing.assert_array_equal(one.axes, two.axes)
    np.testing.assert_array_equal(one.point_axes, two.point_axes)
    np.testing.assert_array_equal(one.ece_shrunk, two.ece_shrunk)
    np.testing.assert_array_equal(one.replicates, two.replicates)
