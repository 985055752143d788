"""The ``runs`` table is declared once (``store/columns.py``): the DDL, the Arrow schema, the
record validator and the frame validator all follow it column by column, and a metric
column added there (one line) is stored, validated, aggregated, exported and read back."""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from store_helpers import HASH, make_frame, make_record

from crsbench.core.errors import StoreError
from crsbench.store.columns import RUNS_TABLE, Role, Rule
from crsbench.store.rules import COLUMN_CHECKS, VALUE_CHECKS
from crsbench.store.schema import ARROW_SCHEMA, ARROW_TYPES, runs_ddl
from crsbench.store.validate import validate_frame

SRC = Path(__file__).resolve().parents[3] / "src" / "crsbench"


def test_the_ddl_and_the_arrow_schema_follow_the_declaration_column_by_column():
    con = duckdb.connect()
    con.execute(runs_ddl())
    described = con.execute("DESCRIBE runs").fetchall()  # name, type, null, key, ...
    assert [d[0] for d in described] == [c.name for c in RUNS_TABLE] == ARROW_SCHEMA.names
    for col, (name, sql, null, key, *_), arrow in zip(RUNS_TABLE, described, ARROW_SCHEMA,
                                                      strict=True):  # fmt: skip
        assert sql == col.sql and arrow.type == ARROW_TYPES[col.sql], name
        assert (null == "YES") == (col.role is Role.METRIC) == col.nullable, name
        assert (key == "PRI") == (name == "run_key"), name


def test_every_rule_is_checked_for_a_record_and_for_a_frame():
    assert set(VALUE_CHECKS) == set(COLUMN_CHECKS) == set(Rule)
    assert {c.rule for c in RUNS_TABLE} == set(Rule)  # no rule declared for nothing


#: One value breaking each rule that a single column's check can see (None: the rule is
#: checked against the store or the identity, see test_rules_across_the_store below).
_BAD = {
    Rule.NAME: "",
    Rule.COUNT: -1,
    Rule.UNIT: 1.5,
    Rule.REGIME: "finetune",
    Rule.METRIC: math.inf,
    Rule.REQUIRED_METRIC: math.inf,
    Rule.FILLED: " ",
    Rule.SECONDS: -1.0,
    Rule.VERSION: 2,
}


@pytest.mark.parametrize("col", [c for c in RUNS_TABLE if c.rule in _BAD], ids=lambda c: c.name)
def test_record_and_frame_refuse_the_same_bad_value_naming_its_column(col):
    bad = _BAD[col.rule]
    changes = {col.name: bad}
    if col.name == "condition":  # an empty condition is also a perturbation without severity
        changes["severity"] = 1
    with pytest.raises(StoreError, match=rf"\b{col.name} must be"):
        make_record(**changes)
    frame = make_frame(3)
    frame[col.name] = frame[col.name].astype(object)
    frame.loc[1, col.name] = bad
    with pytest.raises(StoreError, match=rf"\b{col.name} must be[^\n]*: rows 2; 1 row"):
        validate_frame(frame, HASH)


def test_rules_across_the_store():
    frame = make_frame(3)
    frame.loc[0, "details"] = "[1]"
    frame["created_at"] = frame["created_at"].astype(object)
    frame.loc[2, "created_at"] = "not a time"
    with pytest.raises(StoreError) as info:
        validate_frame(frame, HASH)
    assert "details must be a JSON object" in str(info.value)
    assert "created_at must be a timestamp: rows 3;" in str(info.value)
    with pytest.raises(StoreError, match="config_hash must be 64"):
        make_record(config_hash="abc")
    with pytest.raises(StoreError, match="config_hash must be the store's"):
        validate_frame(make_frame(2), "cd" * 32)
    with pytest.raises(StoreError, match="created_at must be a datetime"):
        make_record(created_at="2025-01-01")


_ADD = 'Column("balanced_accuracy", "DOUBLE", _M, Rule.METRIC),\n'
_CHECK = textwrap.dedent(
    """
    import json, sys
    from crsbench.store import load_runs
    from crsbench.store.columns import METRIC_COLUMNS, REQUIRED_METRICS
    from crsbench.store.records import RunIdentity, RunRecord
    from crsbench.store.run_result import RunResult
    from crsbench.store.schema import ARROW_SCHEMA, metrics_ddl, runs_ddl
    from crsbench.store.writer import ResultsStore

    assert METRIC_COLUMNS[-1] == "balanced_accuracy" and "balanced_accuracy" not in REQUIRED_METRICS
    assert "balanced_accuracy DOUBLE," in runs_ddl() and "balanced_accuracy_mean" in metrics_ddl()
    assert str(ARROW_SCHEMA.field("balanced_accuracy").type) == "double"
    ident = RunIdentity(encoder="pixel", dataset="d", eval_dataset="d", seed=0)
    try:
        RunResult(ident, {"auroc": 0.8, "ece": 0.1, "brier": 0.2, "nll": 0.5,
                          "sens_at_spec90": 0.3, "sens_at_spec95": 0.2}, None, 0.1)
    except Exception as exc:
        print("result:", str(exc)[str(exc).index("Missing"):])
    metrics = {"auroc": 0.8, "ece": 0.1, "brier": 0.2, "nll": 0.5, "balanced_accuracy": 0.625}
    record = RunRecord(**ident.as_dict(), metrics=metrics, config_hash="0" * 64,
                       package_version="t", encoder_revision="r", dataset_revision="d",
                       anchors_version="v1", wall_time_s=0.1)
    with ResultsStore(sys.argv[1], "0" * 64) as store:
        store.append([record])
        store.aggregate()
        store.export("csv", sys.argv[1] + "/export")
    print("stored:", float(load_runs(sys.argv[1])["balanced_accuracy"].iloc[0]))
    print("exported:", "balanced_accuracy_mean" in open(sys.argv[1] + "/export/metrics.csv").read())
    """
)


def test_a_metric_column_is_one_line_of_the_declaration(tmp_path):
    """A copy of the package with one more ``Column`` line (and nothing else changed) stores,
    aggregates, exports and reads the new metric, and every run result must carry it."""
    copy = tmp_path / "src" / "crsbench"
    shutil.copytree(SRC, copy, ignore=shutil.ignore_patterns("__pycache__"))
    columns = copy / "store" / "columns.py"
    text = columns.read_text(encoding="utf-8")
    anchor = re.search(r'( *)Column\("sens_at_spec95".*\n', text)
    assert anchor is not None
    columns.write_text(text.replace(anchor[0], anchor[0] + anchor[1] + _ADD), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "src")}
    done = subprocess.run([sys.executable, "-c", _CHECK, str(tmp_path / "store")], env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "result: Missing ['balanced_accuracy'], unexpected [].",
        "stored: 0.625",
        "exported: True",
    ]
    assert pd.read_csv(tmp_path / "store" / "export" / "runs.csv")[
        "balanced_accuracy"
    ].tolist() == [0.625]
