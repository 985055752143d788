"""make_splits: disjointness, sizes, stratification, official-split policies, determinism."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crsbench.core.errors import ConfigError, DataError
from crsbench.splits import (
    SPLIT_NAMES,
    SplitFractions,
    SplitPolicy,
    Splits,
    check_group_disjoint,
    hash_group,
    make_splits,
)

_spec = importlib.util.spec_from_file_location(
    "_splits_fixtures", Path(__file__).with_name("_splits_fixtures.py")
)
_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fixtures)
make_dataset = _fixtures.make_dataset


def _groups_per_split(splits: Splits) -> dict[str, set[str]]:
    return {s: set(splits.groups[splits.indices(s)].tolist()) for s in SPLIT_NAMES}


def test_partition_sorted_and_sizes_close_to_fractions():
    ds = make_dataset(n_groups=600)
    sp = make_splits(ds, seed=0)
    all_idx = np.concatenate([sp.train, sp.val, sp.calib, sp.test])
    assert sorted(all_idx.tolist()) == list(range(len(ds.image_ids)))
    for s in SPLIT_NAMES:
        idx = sp.indices(s)
        assert idx.dtype == np.int64
        assert np.all(np.diff(idx) > 0)
        assert (sp.assignment[idx] == s).all()
    n = len(ds.image_ids)
    for s, f in SplitFractions().as_dict().items():
        assert abs(sp.sizes()[s] / n - f) < 0.02, (s, sp.sizes())
    groups = _groups_per_split(sp)
    for a in SPLIT_NAMES:
        for b in SPLIT_NAMES:
            if a < b:
                assert not groups[a] & groups[b]


def test_stratified_prevalence_matches_overall():
    ds = make_dataset(n_groups=3000, n_labels=6, seed=3)
    sp = make_splits(ds, seed=1)
    overall = np.nanmean(ds.labels, axis=0)
    for s in SPLIT_NAMES:
        prevalence = np.nanmean(ds.labels[sp.indices(s)], axis=0)
        np.testing.assert_allclose(prevalence, overall, atol=0.015)


def test_stratification_beats_random_group_assignment():
    """Rare-label spread across splits is tighter than a plain random grouped split."""
    ds = make_dataset(n_groups=800, n_labels=4, seed=5, task="multiclass")
    sp = make_splits(ds, seed=0)
    y = ds.labels
    ours = max(abs(y[sp.indices(s)].mean(0) - y.mean(0)).max() for s in SPLIT_NAMES)
    rng = np.random.default_rng(0)
    uniq = np.unique(ds.groups)
    worst = []
    for _ in range(20):
        part = dict(zip(uniq, rng.choice(4, len(uniq), p=[0.6, 0.1, 0.1, 0.2]), strict=True))
        code = np.array([part[g] for g in ds.groups])
        worst.append(max(abs(y[code == k].mean(0) - y.mean(0)).max() for k in range(4)))
    assert ours < np.median(worst)


def test_multiclass_every_class_in_every_split_when_feasible():
    ds = make_dataset(n_groups=500, n_labels=6, task="multiclass", seed=2)
    sp = make_splits(ds, seed=0)
    for s in SPLIT_NAMES:
        assert (ds.labels[sp.indices(s)].sum(0) > 0).all()


@settings(max_examples=25, deadline=None)
@given(
    group_sizes=st.lists(st.integers(1, 12), min_size=12, max_size=80),
    n_labels=st.integers(1, 4),
    seed=st.integers(0, 1000),
)
def test_no_group_leakage_property(group_sizes, n_labels, seed):
    rng = np.random.default_rng(seed)
    groups = np.repeat(
        [f"g{rng.integers(10**9)}_{i}" for i in range(len(group_sizes))], group_sizes
    )
    perm = rng.permutation(len(groups))  # interleave the rows of groups
    groups = groups[perm]
    labels = (rng.random((len(groups), n_labels)) < 0.3).astype(float)
    ds = SimpleNamespace(
        name="prop",
        image_ids=np.array([f"i{k}" for k in range(len(groups))]),
        labels=labels,
        groups=groups,
        task="multilabel",
        metadata=None,
    )
    fr = SplitFractions(train=0.5, val=0.0, calib=0.0, test=0.5)
    sp = make_splits(ds, seed=seed, fractions=fr)
    seen: dict[str, str] = {}
    for g, s in zip(sp.groups.tolist(), sp.assignment.tolist(), strict=True):
        assert seen.setdefault(g, s) == s
    assert len(sp.train) + len(sp.test) == len(groups)


def test_digest_independent_of_row_order_and_seed_sensitive():
    ds = make_dataset(n_groups=300)
    sp = make_splits(ds, seed=0)
    perm = np.random.default_rng(9).permutation(len(ds.image_ids))
    shuffled = SimpleNamespace(
        name=ds.name,
        image_ids=ds.image_ids[perm],
        labels=ds.labels[perm],
        groups=ds.groups[perm],
        task=ds.task,
        metadata=ds.metadata.iloc[perm],
    )
    sp2 = make_splits(shuffled, seed=0)
    assert sp2.digest == sp.digest
    assert make_splits(ds, seed=1).digest != sp.digest
    renamed = SimpleNamespace(**{**vars(ds), "name": "other"})
    assert make_splits(renamed, seed=0).digest != sp.digest


def test_frame_round_trip():
    sp = make_splits(make_dataset(n_groups=100), seed=0)
    frame = sp.to_frame()
    assert list(frame.columns) == ["image_id", "group", "split"]
    again = Splits.from_frame(frame, sp.dataset, sp.seed, sp.policy)
    assert again.digest == sp.digest
    assert np.array_equal(again.test, sp.test)


def test_determinism_across_processes():
    code = (
        "import importlib.util, sys; from pathlib import Path;"
        f"spec = importlib.util.spec_from_file_location('f', {str(Path(__file__).with_name('_splits_fixtures.py'))!r});"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m);"
        "from crsbench.splits import make_splits;"
        "print(make_splits(m.make_dataset(n_groups=250, name='chexpert', official={'train': 0.95, 'valid': 0.05}), seed=3).digest)"
    )
    expected = make_splits(
        make_dataset(n_groups=250, name="chexpert", official={"train": 0.95, "valid": 0.05}),
        seed=3,
    ).digest
    for hash_seed in ("1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
        )
        assert out.stdout.strip() == expected


def test_chexpert_policy_valid_to_test_topped_up():
    ds = make_dataset(n_groups=800, name="chexpert", official={"train": 0.97, "valid": 0.03})
    sp = make_splits(ds, seed=0)
    valid = ds.metadata["official_split"].to_numpy() == "valid"
    assert (sp.assignment[valid] == "test").all()
    assert sp.policy == "chexpert"
    n = len(ds.image_ids)
    assert abs(len(sp.test) / n - 0.2) < 0.02  # topped up with official-train patients
    assert (sp.assignment[~valid] == "test").any()


def test_mimic_policy_maps_official_splits():
    ds = make_dataset(
        n_groups=600, name="mimic_cxr", official={"train": 0.9, "valid": 0.04, "test": 0.06}
    )
    sp = make_splits(ds, seed=0)
    off = ds.metadata["official_split"].to_numpy()
    assert (sp.assignment[off == "test"] == "test").all()
    assert (sp.assignment[off == "valid"] == "val").all()
    assert set(sp.assignment[off == "train"].tolist()) == {"train", "calib"}
    n = len(ds.image_ids)
    assert abs(len(sp.calib) / n - 0.1) < 0.02


def test_grouped_policy_ignores_official_column_and_policy_override():
    ds = make_dataset(n_groups=300, name="isic2019", official={"train": 0.5, "test": 0.5})
    sp = make_splits(ds, seed=0)
    assert sp.policy == "grouped"
    forced = make_splits(SimpleNamespace(**{**vars(ds), "name": "chexpert"}), policy="grouped")
    assert forced.policy == "grouped"
    custom = SplitPolicy(name="mine", official={"train": "pool", "test": "test"})
    sp3 = make_splits(ds, seed=0, policy=custom)
    off = ds.metadata["official_split"].to_numpy()
    assert (sp3.assignment[off == "test"] == "test").all()


def test_official_policy_errors():
    ds = make_dataset(n_groups=100, name="chexpert")
    with pytest.raises(DataError, match="official_split"):
        make_splits(ds)  # no official column under the chexpert policy
    ds = make_dataset(n_groups=100, name="chexpert", official={"train": 0.8, "test": 0.2})
    with pytest.raises(DataError, match=r"official_split must be one of \['train', 'valid'\]"):
        make_splits(ds)
    ds = make_dataset(n_groups=100, name="chexpert", official={"train": 0.9, "valid": 0.1})
    official = ds.metadata["official_split"].to_numpy().copy()
    first_group = ds.groups == ds.groups[0]
    rows = np.flatnonzero(first_group)
    if len(rows) < 2:
        ds.groups[1] = ds.groups[0]
        rows = np.array([0, 1])
    official[rows[0]], official[rows[1]] = "valid", "train"
    ds.metadata["official_split"] = official
    # valid -> test is fixed, train -> pool: the whole group goes to test, no error
    sp = make_splits(ds)
    assert (sp.assignment[rows] == "test").all()
    leaky = SplitPolicy(name="leaky", official={"train": "train", "valid": "test"})
    with pytest.raises(DataError, match="two of our splits"):
        make_splits(ds, policy=leaky)


def test_check_group_disjoint_reports_hashed_ids():
    groups = np.array(["alice", "alice", "bob"])
    with pytest.raises(DataError) as info:
        check_group_disjoint(groups, np.array(["train", "test", "test"]))
    assert hash_group("alice") in str(info.value)
    assert "alice" not in str(info.value)
    check_group_disjoint(groups, np.array(["train", "train", "test"]))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"train": 0.6, "val": 0.1, "calib": 0.1, "test": 0.3}, "sum to 1"),
        ({"train": 0.0, "val": 0.5, "calib": 0.0, "test": 0.5}, "train must be > 0"),
        ({"train": 1.2, "val": 0.0, "calib": 0.0, "test": -0.2}, r"in \[0, 1\]"),
        ({"train": "0.6", "val": 0.1, "calib": 0.1, "test": 0.2}, "must be a number"),
    ],
)
def test_bad_fractions(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        SplitFractions(**kwargs)


def test_bad_dataset_inputs():
    ds = make_dataset(n_groups=50)
    with pytest.raises(ConfigError, match="seed"):
        make_splits(ds, seed=-1)
    with pytest.raises(ConfigError, match="policy"):
        make_splits(ds, policy="nonsense")
    bad = SimpleNamespace(**{**vars(ds), "labels": ds.labels[:, 0]})
    with pytest.raises(DataError, match="labels must have shape"):
        make_splits(bad)
    ids = ds.image_ids.copy()
    ids[3] = ids[2]
    with pytest.raises(DataError, match="unique"):
        make_splits(SimpleNamespace(**{**vars(ds), "image_ids": ids}))
    groups = ds.groups.astype(object)
    groups[4] = None
    with pytest.raises(DataError, match="row 5 group"):
        make_splits(SimpleNamespace(**{**vars(ds), "groups": groups}))
    with pytest.raises(ConfigError, match="attribute 'labels'"):
        make_splits(SimpleNamespace(name="x", image_ids=ids, groups=ds.groups))
    tiny = SimpleNamespace(
        name="tiny",
        image_ids=np.array(["a", "b"]),
        labels=np.array([[1.0], [0.0]]),
        groups=np.array(["p", "p"]),
        task="multilabel",
        metadata=pd.DataFrame(index=[0, 1]),
    )
    with pytest.raises(DataError, match="at least one group"):
        make_splits(tiny)


def test_splits_import_no_torch_or_pil_and_perturb_no_torch():
    code = (
        "import sys, crsbench.splits; bad = [m for m in ('torch', 'PIL') if m in sys.modules];"
        "import crsbench.perturb; bad += ['torch'] if 'torch' in sys.modules else []; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
