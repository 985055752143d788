"""The store's one read-only reader: load_runs, select_runs, read_meta, read_reliability."""

from __future__ import annotations

import duckdb
import pytest
from store_helpers import HASH, make_record

from crsbench.core.errors import DataError, StoreError
from crsbench.store import (
    STORE_FILE,
    ResultsStore,
    load_runs,
    read_meta,
    read_reliability,
    select_runs,
)
from crsbench.store.reliability import rebuild_reliability_table

#: One main-protocol clean full-label row, then one row off it in each filtered column.
_OFF_MAIN = {
    "main": {},
    "lora": {"regime": "lora"},
    "mlp": {"probe": "mlp"},
    "layer": {"layer": 0.5},
    "fraction": {"fraction": 0.25},
    "jpeg": {"condition": "jpeg", "severity": 2},
    "recal": {"recalibrator": "temperature"},
    "shift": {"condition": "shift", "eval_dataset": "mimic_cxr"},
}


@pytest.fixture
def store_dir(tmp_path):
    records = [
        make_record(details={"tag": tag, "reliability": {"bin": [3], "conf": [0.2],
                                                         "acc": [0.25], "count": [4]}}, **ch)
        for tag, ch in _OFF_MAIN.items()
    ]  # fmt: skip
    with ResultsStore(tmp_path, HASH, config_json='{"seeds": [0]}') as store:
        store.append(records)
        rebuild_reliability_table(store.con)
    return tmp_path


def _tags(rows):
    return sorted(rows["details"].str.extract(r'"tag":"(\w+)"')[0])


def test_select_runs_defaults_keep_only_the_main_clean_full_label_row(store_dir):
    runs = load_runs(store_dir)
    assert len(runs) == len(_OFF_MAIN)
    assert _tags(select_runs(runs)) == ["main"]


@pytest.mark.parametrize(
    ("relaxed", "also"),
    [
        ({"probe": None}, ["mlp"]),
        ({"layer": None}, ["layer"]),
        ({"fraction": None}, ["fraction"]),
        ({"condition": None}, ["jpeg"]),
        ({"recalibrator": None}, ["recal"]),
        ({"condition": None, "own_eval": None}, ["jpeg", "shift"]),
        ({"regime": "lora"}, None),
    ],
)
def test_each_relaxed_filter_adds_exactly_its_rows(store_dir, relaxed, also):
    got = _tags(select_runs(load_runs(store_dir), **relaxed))
    assert got == (["lora"] if also is None else sorted(["main", *also]))


def test_own_eval_false_keeps_the_shift_rows(store_dir):
    rows = select_runs(load_runs(store_dir), condition="shift", own_eval=False)
    assert _tags(rows) == ["shift"]


def test_reliability_table_holds_the_clean_full_label_rows_of_every_recalibrator(store_dir):
    table = read_reliability(store_dir)
    assert sorted(table["recalibrator"]) == ["none", "temperature"]
    assert table[["bin", "conf", "acc", "count"]].iloc[0].tolist() == [3, 0.2, 0.25, 4]


def test_meta_and_missing_tables(store_dir, tmp_path_factory):
    assert read_meta(store_dir)["config_json"] == '{"seeds": [0]}'
    bare = tmp_path_factory.mktemp("bare")
    with duckdb.connect(str(bare / STORE_FILE)) as con:
        con.execute("CREATE TABLE runs (encoder VARCHAR)")
    assert read_meta(bare) == {}
    assert read_reliability(bare) is None
    with pytest.raises(DataError, match="must have columns"):
        load_runs(bare)
    with pytest.raises(StoreError, match="must exist"):
        load_runs(bare / "nowhere")


def test_reliability_table_without_its_columns_is_named(tmp_path):
    with duckdb.connect(str(tmp_path / STORE_FILE)) as con:
        con.execute("CREATE TABLE reliability (encoder VARCHAR)")
    with pytest.raises(StoreError, match=r"table 'reliability' must have columns .*missing"):
        read_reliability(tmp_path)
