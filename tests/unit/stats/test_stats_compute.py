"""Evaluate once, store, then read (``crsbench.stats.compute``): the stored analyses equal the
computed ones, their key moves with every input, a failed compute keeps what was stored, and
the report is the same whether it computed the analyses or read them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest

from crsbench.core.errors import StoreError
from crsbench.stats.analysis_registry import Analysis
from crsbench.stats.analyze import ANALYSES, run_analyses, write_analyses
from crsbench.stats.compute import analysis_inputs, stored_analyses
from crsbench.stats.report_tables import REPORT_KEY
from crsbench.store import load_runs
from crsbench.store.computed import COMPUTED_DIR, input_key


def _simulated(path: Path, rng_seed: int = 0) -> Path:
    from crsbench.testing import simulate_runs, write_store

    df = simulate_runs(n_encoders=3, datasets=("isic2019", "chexpert"), seeds=2, rng_seed=rng_seed)
    write_store(df, path)
    return path


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small simulated store (no per-sample predictions: the seed-only bootstrap)."""
    return _simulated(tmp_path_factory.mktemp("sim") / "store")


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A toy store with per-sample predictions (so every kind of analysis runs)."""
    from crsbench.testing.prediction_store import toy_cells, write_prediction_store

    return write_prediction_store(tmp_path_factory.mktemp("toy") / "store", toy_cells()).parent


def _key(store: Path, **change) -> str:
    args = {"n_replicates": 20, "seed": 0, "anchors": None, "interval": "test-patients"}
    args.update(change)
    return input_key(analysis_inputs(store, load_runs(store), **args))


def _same_tables_and_csvs(store: Path, out: Path, n_replicates: int) -> set[str]:
    """Computed and stored, then read: the same tables and summary; and the CSVs written from
    them are those :func:`run_analyses` writes (computing afresh), byte for byte."""
    runs = load_runs(store)
    said: list[str] = []
    first, computed = stored_analyses(store, runs, n_replicates, say=said.append)
    assert computed and said[0].startswith("computed the analyses")
    again, computed = stored_analyses(store, runs, n_replicates, say=said.append)
    assert not computed and said[1].startswith("read the stored analyses")
    assert list(first.tables) == list(again.tables)
    for name, table in first.tables.items():
        pd.testing.assert_frame_equal(again.tables[name], table, check_exact=True, obj=name)
    write_analyses(again, out / "read")
    summary = run_analyses(runs, out / "direct", n_replicates=n_replicates, store=store)
    assert again.summary == first.summary
    assert {k: v for k, v in first.summary.items() if k != REPORT_KEY} == summary
    direct = sorted(p.name for p in (out / "direct").iterdir())
    assert direct == sorted(p.name for p in (out / "read").iterdir())
    for name in direct:
        assert (out / "read" / name).read_bytes() == (out / "direct" / name).read_bytes(), name
    return set(first.tables)


def test_stored_tables_equal_the_computed_ones_and_are_read_the_second_time(store, tmp_path):
    names = _same_tables_and_csvs(store, tmp_path, 20)
    assert {"cells", "leaderboard", "bootstrap", "bootstrap_pairwise", "at_a_glance"} <= names


@pytest.mark.slow
def test_stored_prediction_analyses_equal_the_computed_ones(toy, tmp_path):
    names = _same_tables_and_csvs(toy, tmp_path, 20)
    assert {"subgroups", "subgroup_crs", "operating_points", "prediction_flips"} <= names


def test_a_table_round_trips_with_its_types_and_index(tmp_path):
    from crsbench.store.computed import ComputedTables, read_computed, write_computed

    frame = pd.DataFrame(
        {"encoder": ["a", "b", None], "CRS": [0.5, float("nan"), 1 / 3], "tier": [1, 2, 3],
         "flagged": [True, False, True], "when": pd.to_datetime(["2024-01-01"] * 3, utc=True)},
        index=pd.Index(["x", "y", "z"], name="row"),
    )  # fmt: skip
    tables = {"t": frame, "empty": pd.DataFrame(columns=["encoder", "CRS"])}
    write_computed(tmp_path, ComputedTables(tables, {"n": 1, "x": [1.5, None]}, {"i": 1}, "k1"))
    back = read_computed(tmp_path, "k1")
    assert back is not None and list(back.tables) == ["t", "empty"]
    pd.testing.assert_frame_equal(back.tables["t"], frame, check_exact=True)
    assert list(back.tables["empty"].columns) == ["encoder", "CRS"]
    assert back.summary == {"n": 1, "x": [1.5, None]} and back.inputs == {"i": 1}
    assert read_computed(tmp_path, "k2") is None
    (tmp_path / COMPUTED_DIR / "k3.zip").write_bytes(b"not a zip")
    with pytest.raises(StoreError, match="delete the file"):
        read_computed(tmp_path, "k3")


def test_the_key_moves_with_every_input(store, tmp_path, monkeypatch):
    import crsbench
    from crsbench.scoring.anchors import load_anchors

    base = _key(store)
    assert _key(store) == base  # the same inputs: the same key
    weights = {"P": 0.5, "I": 0.25, "W": 0.25}
    reweighted = dataclasses.replace(load_anchors("v2"), weights=weights)
    moved = {
        "replicates": _key(store, n_replicates=21),
        "seed": _key(store, seed=1),
        "interval": _key(store, interval="seed-only"),
        "anchors": _key(store, anchors="v1"),  # the store's runs recorded v2
        "weights": _key(store, anchors=reweighted),
    }
    assert _key(store, anchors="v2") == base  # what the runs recorded: the default
    monkeypatch.setattr(crsbench, "__version__", "0.0.0-other")
    moved["version"] = _key(store)
    monkeypatch.undo()
    moved["runs"] = _key(_simulated(tmp_path / "other", rng_seed=1))
    assert all(key != base for key in moved.values()), moved
    assert len(set(moved.values())) == len(moved)


def test_a_failed_compute_keeps_what_was_stored(store, monkeypatch):
    from crsbench.stats import analyze_paper

    runs = load_runs(store)
    stored_analyses(store, runs, 20)  # stored (or already there)
    before = sorted(p.name for p in (store / COMPUTED_DIR).iterdir())

    def shape_bug(*args, **kwargs):
        raise ValueError("a bug, not a documented reason")

    monkeypatch.setattr(analyze_paper, "layer_depth", shape_bug)
    with pytest.raises(ValueError, match="a bug"):
        stored_analyses(store, runs, 20, seed=7)  # another key: computed, and it fails
    assert sorted(p.name for p in (store / COMPUTED_DIR).iterdir()) == before
    monkeypatch.undo()
    _, computed = stored_analyses(store, runs, 20)
    assert not computed  # the earlier tables are still read


def test_every_analysis_declares_known_inputs_and_a_unique_name():
    names = [a.name for a in ANALYSES]
    assert len(names) == len(set(names))
    assert all(a.needs for a in ANALYSES)
    with pytest.raises(ValueError, match="must declare inputs"):
        Analysis("bad", ("runs", "weather"), lambda x: pd.DataFrame())


@pytest.mark.slow
def test_the_report_is_the_same_whether_it_computed_or_read_the_analyses(store, tmp_path):
    from crsbench.cli.report_command import write_report

    said: list[str] = []
    write_report(store, tmp_path / "a", n_replicates=15, say=said.append)
    write_report(store, tmp_path / "b", n_replicates=15, say=said.append)
    assert said[0].startswith("computed") and said[1].startswith("read")
    tables = sorted(p.name for p in (tmp_path / "a" / "tables").glob("*.csv"))
    assert tables == sorted(p.name for p in (tmp_path / "b" / "tables").glob("*.csv"))
    assert len(tables) > 5
    for name in tables:
        a = (tmp_path / "a" / "tables" / name).read_text(encoding="utf-8")
        b = (tmp_path / "b" / "tables" / name).read_text(encoding="utf-8")
        if name == "provenance.csv":  # the time the report was generated
            a, b = (_drop_generated(t) for t in (a, b))
        assert a == b, name


def _drop_generated(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith("report generated"))


def test_a_store_folder_that_refuses_the_write_still_gets_its_analyses(store, monkeypatch):
    from crsbench.core.errors import DiskError
    from crsbench.stats import compute

    def refused(*args, **kwargs):
        raise DiskError("cannot write STORE/computed: the file system is read-only")

    monkeypatch.setattr(compute, "write_computed", refused)
    said: list[str] = []
    got, computed = stored_analyses(store, load_runs(store), 20, seed=11, say=said.append)
    assert computed and "leaderboard" in got.tables
    assert said == [
        "computed the analyses; they could not be stored (cannot write STORE/computed: "
        "the file system is read-only)"
    ]


def test_the_leaderboard_from_the_stored_bootstrap_is_the_computed_one(store):
    from crsbench.stats.leaderboard import build_leaderboard

    runs = load_runs(store)
    stored, _ = stored_analyses(store, runs, 20)
    computed = build_leaderboard(runs, n_replicates=20, store=store)
    read = build_leaderboard(runs, n_replicates=20, store=store, stored=stored)
    assert computed["tier"].notna().sum() >= 2
    pd.testing.assert_frame_equal(read, computed, check_exact=True)
    assert read.attrs == computed.attrs
