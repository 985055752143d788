"""ResultsStore: idempotent append, conflicts, config ownership, aggregate, export, bulk path."""

from __future__ import annotations

import json
import warnings
from datetime import datetime
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from store_helpers import HASH, OTHER_HASH, make_frame, make_record

from crsbench.core.errors import StoreError
from crsbench.store import (
    GROUP_COLUMNS,
    METRIC_COLUMNS,
    RUN_COLUMNS,
    ResultsStore,
    StoreLockWarning,
)
from crsbench.store.lock import check_local_filesystem, filesystem_type


@pytest.fixture
def store(tmp_path: Path):
    with ResultsStore(tmp_path, HASH, config_json='{"seeds": [0]}') as s:
        yield s


def test_creates_tables_and_meta(store: ResultsStore, tmp_path: Path) -> None:
    assert (tmp_path / "results.duckdb").is_file()
    meta = store.meta
    assert meta["config_hash"] == HASH and meta["schema_version"] == 1
    assert json.loads(meta["config_json"]) == {"seeds": [0]}
    cols = [r[0] for r in store.con.execute("DESCRIBE runs").fetchall()]
    assert tuple(cols) == RUN_COLUMNS
    assert store.count() == 0 and store.done_keys() == set()


def test_append_is_idempotent(store: ResultsStore) -> None:
    recs = [make_record(seed=s) for s in range(5)]
    assert store.append(recs) == 5
    # same payload, new wall time and timestamp: still the same run → no-op
    again = [
        make_record(seed=s, wall_time_s=9.0, created_at=datetime(2030, 1, 1)) for s in range(5)
    ]
    assert store.append(again) == 0
    assert store.append(recs + [make_record(seed=5)]) == 1
    assert store.count() == 6
    assert store.done_keys() == {r.run_key for r in recs} | {make_record(seed=5).run_key}
    assert store.audit()["duplicate_keys"] == 0


def test_conflicting_payload_refused_showing_both(store: ResultsStore) -> None:
    store.append([make_record(seed=0, auroc=0.81)])
    with pytest.raises(StoreError) as info:
        store.append([make_record(seed=1), make_record(seed=0, auroc=0.79)])
    msg = str(info.value)
    assert "auroc stored 0.81 vs new 0.79" in msg and "seed=0" in msg
    assert store.count() == 1  # the whole batch was rolled back, seed=1 included
    frame = store.runs_frame()
    assert frame["auroc"].tolist() == [0.81]
    with pytest.raises(StoreError, match="details stored"):
        store.append([make_record(seed=0, auroc=0.81, details={"chosen_C": 2.0})])


def test_conflict_inside_one_batch(store: ResultsStore) -> None:
    with pytest.raises(StoreError, match="one batch holds different payloads"):
        store.append([make_record(auroc=0.7), make_record(auroc=0.71)])
    assert store.append([make_record(), make_record()]) == 1


def test_records_of_another_config_refused(store: ResultsStore) -> None:
    with pytest.raises(StoreError, match="another config"):
        store.append([make_record(config_hash=OTHER_HASH)])


def test_store_of_another_config_refused_before_work(tmp_path: Path) -> None:
    with ResultsStore(tmp_path, HASH) as s:
        s.append([make_record()])
    with pytest.raises(StoreError) as info:
        ResultsStore(tmp_path, OTHER_HASH)
    msg = str(info.value)
    assert HASH[:12] in msg and OTHER_HASH[:12] in msg and "--force-new" in msg
    assert not (tmp_path / ".lock").exists()  # the refused writer released its lock
    (tmp_path / "scores").mkdir()
    (tmp_path / "scores" / "leaderboard.csv").write_text("old\n")
    with ResultsStore(tmp_path, OTHER_HASH, force_new=True) as s:
        assert s.count() == 0 and s.meta["config_hash"] == OTHER_HASH
        moved = {a.name: b for a, b in s.moved_aside}
    aside = list(tmp_path.glob(f"superseded/config-{HASH[:12]}-*/results.duckdb"))
    assert len(aside) == 1  # the old store was moved aside, not deleted
    assert moved["results.duckdb"] == aside[0] and moved["scores"] == aside[0].parent / "scores"
    assert (aside[0].parent / "scores" / "leaderboard.csv").read_text() == "old\n"
    assert not (tmp_path / "scores").exists()  # derived folders moved with their store
    con = duckdb.connect(str(aside[0]), read_only=True)
    assert con.execute("SELECT count(*) FROM runs").fetchall()[0][0] == 1
    con.close()


def test_read_only_mode(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no results store"):
        ResultsStore(tmp_path, None, mode="r")
    with ResultsStore(tmp_path, HASH) as s:
        s.append([make_record()])
    with ResultsStore(tmp_path, None, mode="r") as r:
        assert r.count() == 1
        with pytest.raises(StoreError, match="read-only"):
            r.append([make_record(seed=1)])
    with pytest.raises(StoreError, match="written by config"):
        ResultsStore(tmp_path, OTHER_HASH, mode="r")


def test_newer_schema_refused(tmp_path: Path) -> None:
    ResultsStore(tmp_path, HASH).close()
    con = duckdb.connect(str(tmp_path / "results.duckdb"))
    con.execute("UPDATE meta SET schema_version = 99").fetchall()
    con.close()
    with pytest.raises(StoreError, match="schema version 99, newer"):
        ResultsStore(tmp_path, HASH)


def test_aggregate_matches_pandas_groupby(store: ResultsStore) -> None:
    frame = make_frame(900, seed=3)
    frame = frame[~((frame["seed"] == 4) & (frame["encoder"] == "enc1"))]  # uneven seed counts
    store.append_frame(frame)
    n = store.aggregate()
    got = store.metrics_frame()
    ref = (
        frame.groupby(list(GROUP_COLUMNS))
        .agg(
            n_seeds=("seed", "size"),
            **{f"{m}_{s}": (m, s) for m in METRIC_COLUMNS for s in ("mean", "std")},
            **{f"{m}_n_seeds": (m, "count") for m in METRIC_COLUMNS},
        )
        .reset_index()
    )
    assert n == len(ref) == len(got)
    merged = got.merge(ref, on=list(GROUP_COLUMNS), suffixes=("", "_ref"))
    assert len(merged) == len(ref)
    assert (merged["n_seeds"] == merged["n_seeds_ref"]).all()
    for m in METRIC_COLUMNS:
        for s in ("mean", "std"):
            np.testing.assert_allclose(merged[f"{m}_{s}"], merged[f"{m}_{s}_ref"], rtol=1e-12)
        assert (merged[f"{m}_n_seeds"] == merged[f"{m}_n_seeds_ref"]).all()
    assert store.aggregate() == n  # rebuilding is idempotent


def test_aggregate_refuses_mixed_revisions(store: ResultsStore) -> None:
    store.append([make_record(seed=0), make_record(seed=1, dataset_revision="sha256:other")])
    with pytest.raises(StoreError, match="revisions"):
        store.aggregate()
    assert store.aggregate(allow_mixed=True) == 1


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_export_round_trip(store: ResultsStore, tmp_path: Path, fmt: str) -> None:
    store.append_frame(make_frame(200))
    store.aggregate()
    dest = tmp_path / "export"
    (dest).mkdir()
    (dest / f"runs.{fmt}").write_text("old contents")
    paths = store.export(fmt, dest)
    assert sorted(p.name for p in dest.iterdir()) == sorted(
        ["meta.json", f"runs.{fmt}", f"metrics.{fmt}"]
    )
    read = pd.read_parquet if fmt == "parquet" else pd.read_csv
    runs = read(paths["runs"])
    expected = store.runs_frame()
    assert list(runs.columns) == list(RUN_COLUMNS) and len(runs) == 200
    assert runs["run_key"].tolist() == expected["run_key"].tolist()
    for m in ("auroc", "ece", "sens_at_spec90"):
        np.testing.assert_allclose(runs[m].to_numpy(float), expected[m].to_numpy(float), rtol=1e-15)
    assert len(read(paths["metrics"])) == len(store.metrics_frame())


def test_append_frame_equals_record_path(tmp_path: Path) -> None:
    recs = [
        make_record(seed=s, condition=c, severity=v)
        for s in range(3)
        for c, v in (("clean", 0), ("jpeg", 2))
    ]
    rows = pd.DataFrame([r.to_row() for r in recs]).drop(columns="run_key")
    with ResultsStore(tmp_path / "a", HASH) as a, ResultsStore(tmp_path / "b", HASH) as b:
        a.append(recs)
        b.append_frame(rows)
        fa, fb = a.runs_frame(), b.runs_frame()
    pd.testing.assert_frame_equal(fa, fb)


def test_append_frame_validation_names_rows(store: ResultsStore) -> None:
    frame = make_frame(20)
    frame.loc[[2, 5], "encoder_revision"] = ""
    frame.loc[7, "auroc"] = np.inf
    frame.loc[8, "fraction"] = 1.5
    with pytest.raises(StoreError) as info:
        store.append_frame(frame)
    msg = str(info.value)
    assert "encoder_revision must be filled: rows 3, 6; 2 row(s)" in msg
    assert "auroc must be finite or missing: rows 8;" in msg
    assert "fraction must be in (0, 1]: rows 9;" in msg
    assert store.count() == 0
    bad_key = make_frame(3)
    bad_key["run_key"] = "0" * 64
    with pytest.raises(StoreError, match="run_key must match"):
        store.append_frame(bad_key)
    with pytest.raises(StoreError, match="Missing"):
        store.append_frame(make_frame(3).drop(columns="details"))
    missing_auroc = make_frame(2)
    missing_auroc.loc[0, "auroc"] = np.nan
    with pytest.raises(StoreError, match="auroc missing without"):
        store.append_frame(missing_auroc)
    missing_auroc.loc[0, "details"] = json.dumps({"undefined": {"auroc": "one class"}})
    assert store.append_frame(missing_auroc) == 2
    nulls, nans = store.con.execute(
        "SELECT count(*) FILTER (WHERE auroc IS NULL), count(*) FILTER (WHERE isnan(auroc)) FROM runs"
    ).fetchall()[0]
    assert (nulls, nans) == (1, 0)  # stored as NULL, never NaN
    # details with another key order are the same payload (canonical JSON) → re-append is a no-op
    reordered = missing_auroc.copy()
    reordered.loc[0, "details"] = '{"undefined":   {"auroc": "one class"}}'
    assert store.append_frame(reordered) == 0
    broken = make_frame(1)
    broken.loc[0, "details"] = "{not json"
    with pytest.raises(StoreError, match="details must be a JSON object"):
        store.append_frame(broken)


def test_has_keys_and_quick_scale(store: ResultsStore) -> None:
    frame = make_frame(50_000, seed=1)
    assert store.append_frame(frame) == 50_000
    keys = sorted(store.done_keys())
    assert len(keys) == 50_000
    probe = keys[::5] + ["f" * 64]
    assert store.has_keys(probe) == set(keys[::5])
    assert store.aggregate() == frame.groupby(list(GROUP_COLUMNS)).ngroups
    assert store.append_frame(frame.iloc[:1000]) == 0  # re-append: no-op
    assert store.audit() == {
        "rows": 50_000,
        "duplicate_keys": 0,
        "other_config": 0,
        "missing_provenance": 0,
    }


def test_network_filesystem_refused(tmp_path: Path) -> None:
    mounts = tmp_path / "mounts"
    store_dir = tmp_path / "nfs share" / "out"
    store_dir.mkdir(parents=True)
    share = str(tmp_path / "nfs share").replace(" ", "\\040")
    mounts.write_text(f"/dev/sda1 / ext4 rw 0 0\nserver:/x {share} nfs4 rw 0 0\n")
    assert filesystem_type(store_dir, mounts) == "nfs4"
    assert filesystem_type(tmp_path, mounts) == "ext4"
    with pytest.raises(StoreError, match="network filesystem"):
        check_local_filesystem(store_dir, mounts=mounts)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_local_filesystem(store_dir, allow_network=True, mounts=mounts)
    assert any(issubclass(w.category, StoreLockWarning) for w in caught)
    check_local_filesystem(tmp_path, mounts=mounts)  # local: silent
