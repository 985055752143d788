"""The side tables' DDL and Arrow schemas are derived from store/table_specs.py: the derived tables
have exactly the columns, types, nullability and keys of the statements written out by hand
before (kept here as the reference), and a batch in the derived Arrow schema inserts."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest

from crsbench.store.table_specs import TABLES

#: The statements as they were written by hand in cards.py, quarantine.py, plan.py,
#: schema.py and predictions.py before the declaration.
HAND_WRITTEN = {
    "cards": "CREATE TABLE cards (kind VARCHAR NOT NULL, name VARCHAR NOT NULL, fact VARCHAR "
    "NOT NULL, value VARCHAR NOT NULL, PRIMARY KEY (kind, name, fact))",
    "quarantine": "CREATE TABLE quarantine (dataset VARCHAR NOT NULL, split VARCHAR NOT NULL, "
    "image_id VARCHAR NOT NULL, path VARCHAR NOT NULL, error_class VARCHAR NOT NULL, message "
    "VARCHAR NOT NULL, PRIMARY KEY (dataset, image_id))",
    "plan": "CREATE TABLE plan (regime VARCHAR NOT NULL, encoder VARCHAR NOT NULL, dataset "
    "VARCHAR NOT NULL, seeds VARCHAR NOT NULL, fractions VARCHAR NOT NULL, conditions VARCHAR "
    "NOT NULL, shift_targets VARCHAR NOT NULL, PRIMARY KEY (regime, encoder, dataset))",
    "meta": "CREATE TABLE meta (schema_version INTEGER NOT NULL, config_hash VARCHAR NOT NULL, "
    "config_json VARCHAR NOT NULL, package_version VARCHAR NOT NULL, created_at TIMESTAMP NOT "
    "NULL)",
    "eval_splits": "CREATE TABLE eval_splits (split_key VARCHAR PRIMARY KEY, "
    "dataset VARCHAR NOT NULL, split VARCHAR NOT NULL, task VARCHAR NOT NULL, n_rows INTEGER "
    "NOT NULL, n_targets INTEGER NOT NULL, image_ids VARCHAR[] NOT NULL, groups VARCHAR[] NOT "
    "NULL, targets BLOB NOT NULL)",
    "prediction_blobs": "CREATE TABLE prediction_blobs (prob_key VARCHAR PRIMARY KEY, n_rows "
    "INTEGER NOT NULL, n_outputs INTEGER NOT NULL, dtype VARCHAR NOT NULL, prob BLOB NOT NULL)",
    "predictions": "CREATE TABLE predictions (run_key VARCHAR NOT NULL, split VARCHAR NOT NULL, "
    "split_key VARCHAR NOT NULL, prob_key VARCHAR NOT NULL, PRIMARY KEY (run_key, split))",
    "split_metadata": "CREATE TABLE split_metadata (split_key VARCHAR NOT NULL, "
    "attribute VARCHAR NOT NULL, vals VARCHAR[] NOT NULL, PRIMARY KEY (split_key, attribute))",
}


def _layout(ddl: str, name: str) -> tuple[list, list]:
    con = duckdb.connect()
    con.execute(ddl)
    return _layout_of(con, name)


def _layout_of(con: duckdb.DuckDBPyConnection, name: str) -> tuple[list, list]:
    cols = con.execute(
        "SELECT column_name, data_type, is_nullable FROM information_schema.columns "
        "WHERE table_name = ? ORDER BY ordinal_position", [name]
    ).fetchall()  # fmt: skip
    keys = con.execute(
        "SELECT constraint_column_names FROM duckdb_constraints() "
        "WHERE table_name = ? AND constraint_type = 'PRIMARY KEY'", [name]
    ).fetchall()  # fmt: skip
    return cols, keys


def test_every_hand_written_table_is_declared() -> None:
    assert set(TABLES) == {*HAND_WRITTEN, "reliability"}


def test_the_reliability_table_is_rebuilt_in_its_declared_layout() -> None:
    """The table is rebuilt from the runs' details: the declared column types (those pandas
    inferred before the declaration), every column filled, as many rows as bins."""
    import json

    from crsbench.store.reliability import rebuild_reliability_table
    from crsbench.store.schema import runs_ddl

    con = duckdb.connect()
    con.execute(runs_ddl())
    details = json.dumps({"reliability": {"bin": [0, 3], "conf": [0.1, 0.7],
                                          "acc": [0.0, 1.0], "count": [4, 2]}})  # fmt: skip
    con.execute(
        "INSERT INTO runs VALUES ('e', 'd', 'd', 0, 'frozen', 'logistic', 1.0, 1.0, 'clean', 0, "
        "'none', 0.8, 0.1, 0.2, 0.5, NULL, NULL, 'k', ?, 'v', 'r', 'dr', 'v1', 0.1, "
        "now()::TIMESTAMP, 1, ?)", ["0" * 64, details]
    )  # fmt: skip
    assert rebuild_reliability_table(con) == 2
    cols, _ = _layout_of(con, "reliability")
    assert [(n, t) for n, t, _ in cols] == list(TABLES["reliability"].columns)
    rows = con.execute("SELECT bin, conf, acc, count FROM reliability ORDER BY bin").fetchall()
    assert rows == [(0, 0.1, 0.0, 4), (3, 0.7, 1.0, 2)]


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_the_derived_table_equals_the_hand_written_one(name: str) -> None:
    assert _layout(TABLES[name].ddl(), name) == _layout(HAND_WRITTEN[name], name)


@pytest.mark.parametrize("name", sorted(TABLES))
def test_a_batch_in_the_derived_arrow_schema_inserts(name: str) -> None:
    spec = TABLES[name]
    example = {"VARCHAR": "x", "INTEGER": 1, "BIGINT": 2, "DOUBLE": 0.5, "BLOB": b"\x00",
               "VARCHAR[]": ["a"], "TIMESTAMP": pa.scalar(0, pa.timestamp("us")).as_py()}  # fmt: skip
    batch = pa.Table.from_pylist([{n: example[t] for n, t in spec.columns}], schema=spec.arrow())
    con = duckdb.connect()
    con.execute(spec.ddl())
    con.register("batch", batch)
    con.execute(f"INSERT INTO {name} SELECT * FROM batch")
    assert con.execute(f"SELECT count(*) FROM {name}").fetchone() == (1,)
