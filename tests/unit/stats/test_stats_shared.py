"""``sharing_results`` beyond the bootstrap: the analyses and the report of one store read its
predictions once and run the subgroup analysis and the control-probe comparison once; any
other store, object or setting is computed afresh, and nothing is kept outside the block."""

from __future__ import annotations

import gc

import pytest

from crsbench.stats import control_probes as cp_mod
from crsbench.stats import store_predictions as sp_mod
from crsbench.stats import subgroups as sg_mod
from crsbench.stats.control_probes import control_probe_agreement
from crsbench.stats.shared import shared_on, sharing_results
from crsbench.stats.store_predictions import load_store_predictions
from crsbench.stats.subgroups import subgroup_analysis
from crsbench.store import load_runs
from crsbench.testing import simulate_runs, write_store
from crsbench.testing.prediction_store import toy_cells, write_prediction_store

ENCODERS = ("resnet50", "vit_b16", "clip", "dinov2")


def _counting(monkeypatch, module, name):
    calls = []
    real = getattr(module, name)
    monkeypatch.setattr(module, name, lambda *a, **k: (calls.append(a), real(*a, **k))[1])
    return calls


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("shared_preds") / "store"
    write_prediction_store(path, toy_cells())
    return path


def test_predictions_are_read_once_per_store_cells_and_seeds(store, monkeypatch):
    reads = _counting(monkeypatch, sp_mod, "_read")
    cells = [(e, "chexpert") for e in ENCODERS]
    with sharing_results():
        first = load_store_predictions(store, cells, [0])
        again = load_store_predictions(store, list(cells), (0,))
        fewer = load_store_predictions(store, cells[:2], [0])
    assert again is first and fewer is not first and len(reads) == 2
    assert load_store_predictions(store, cells, [0]) is not first  # outside the block
    assert len(reads) == 3


def test_subgroup_analysis_is_shared_for_the_same_predictions_and_settings(store, monkeypatch):
    runs = _counting(monkeypatch, sg_mod, "_analysis")
    cells = [(e, "chexpert") for e in ENCODERS]
    with sharing_results():
        preds = load_store_predictions(store, cells, [0]).cells
        first = subgroup_analysis(preds, n_replicates=50, seed=1)
        assert subgroup_analysis(preds, n_replicates=50, seed=1) is first
        other_seed = subgroup_analysis(preds, n_replicates=50, seed=2)
        copy = subgroup_analysis(dict(preds), n_replicates=50, seed=1)  # another object
    assert len(runs) == 3 and other_seed is not first and copy is not first
    assert copy.subgroups.equals(first.subgroups)


def test_a_freed_object_whose_id_is_reused_never_hits():
    values = []
    with sharing_results():
        for i in range(50):  # new dicts often reuse a freed one's id
            obj = {"i": i}
            values.append(shared_on("probe", obj, (), lambda obj=obj: obj["i"]))
            del obj
            gc.collect()
    assert values == list(range(50))


def test_control_probe_comparison_is_shared_for_equal_runs_tables(tmp_path, monkeypatch):
    path = tmp_path / "runs_store"
    write_store(simulate_runs(n_encoders=3, datasets=("isic2019",), seeds=2, rng_seed=4), path)
    calls = _counting(monkeypatch, cp_mod, "_agreement")
    with sharing_results():
        first = control_probe_agreement(load_runs(path))
        again = control_probe_agreement(load_runs(path))  # read again: equal, not the same
        changed = load_runs(path)
        changed.loc[changed.index[0], "auroc"] = 0.5
        control_probe_agreement(changed)
    assert again is first and len(calls) == 2


def test_the_toy_store_has_every_cell_and_subgroups(store):
    found = load_store_predictions(store, [(e, "chexpert") for e in ENCODERS], [0])
    assert not found.missing and len(found.cells) == 4
    assert not subgroup_analysis(found.cells, n_replicates=20).subgroups.empty
