"""RunRecord / RunIdentity: the schema validator and the run key."""

from __future__ import annotations

import math

import pytest
from store_helpers import HASH, OTHER_HASH, make_record

from crsbench.core.errors import StoreError
from crsbench.store import IDENTITY_COLUMNS, RunIdentity, make_run_key


def test_run_key_is_stable_and_normalises_floats() -> None:
    a = make_record(fraction=0.1, layer=0.5)
    b = make_record(fraction=1e-1, layer=0.5000000000000001, auroc=0.3, wall_time_s=9.0)
    assert a.run_key == b.run_key  # metrics and provenance are not identity
    assert len(a.run_key) == 64 and int(a.run_key, 16) >= 0
    assert a.identity().key(HASH) == a.run_key
    assert make_run_key(a.as_dict(), HASH) == a.run_key


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("encoder", "random_cnn"),
        ("dataset", "aptos2019"),
        ("eval_dataset", "mimic_cxr"),
        ("seed", 1),
        ("regime", "lora"),
        ("probe", "knn"),
        ("layer", 0.75),
        ("fraction", 0.25),
        ("recalibrator", "temperature"),
    ],
)
def test_each_identity_column_changes_the_key(field: str, value: object) -> None:
    assert make_record(**{field: value}).run_key != make_record().run_key


def test_condition_severity_and_config_hash_change_the_key() -> None:
    keys = {
        make_record().run_key,
        make_record(condition="jpeg", severity=1).run_key,
        make_record(condition="jpeg", severity=2).run_key,
        make_record(condition="shift", eval_dataset="mimic_cxr").run_key,
        make_record(config_hash=OTHER_HASH).run_key,
    }
    assert len(keys) == 5
    assert len(IDENTITY_COLUMNS) == 11


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"encoder_revision": ""}, "encoder_revision must be filled"),
        ({"dataset_revision": "  "}, "dataset_revision must be filled"),
        ({"package_version": None}, "package_version must be filled"),
        ({"config_hash": "abc"}, "config_hash must be 64"),
        ({"auroc": math.nan}, "auroc must be a finite number"),
        ({"ece": math.inf}, "ece must be a finite number"),
        ({"auroc": None}, "auroc is missing"),
        ({"wall_time_s": -1.0}, "wall_time_s must be a number >= 0"),
        ({"fraction": 0.0}, "fraction must be a number in (0, 1]"),
        ({"layer": 1.5}, "layer must be a number in (0, 1]"),
        ({"seed": -1}, "seed must be an integer >= 0"),
        ({"regime": "finetune"}, "regime must be one of"),
        ({"severity": 2}, "severity must be 0 for condition 'clean'"),
        ({"condition": "jpeg"}, "severity must be >= 1"),
        ({"schema_version": 2}, "schema_version must be 1"),
        ({"encoder": ""}, "encoder must be a non-empty string"),
        ({"details": {"x": math.nan}}, "details must be JSON-serialisable"),
    ],
)
def test_schema_validator_rejects(changes: dict, needle: str) -> None:
    with pytest.raises(StoreError) as info:
        rec = make_record(**changes)
        rec.to_row()
    assert needle in str(info.value)


def test_missing_metric_allowed_with_a_reason() -> None:
    rec = make_record(auroc=None, details={"undefined": {"auroc": "no positives in test split"}})
    assert rec.to_row()["auroc"] is None
    assert make_record(sens_at_spec90=None).metrics["sens_at_spec90"] is None  # optional metric
    assert make_record().metrics["sens_at_spec95"] is None  # a metric left out is None


def test_a_metric_outside_the_declaration_is_refused() -> None:
    with pytest.raises(StoreError, match=r"metrics must be among .* Got \['accuracy'\]"):
        make_record(metrics={"auroc": 0.8, "ece": 0.05, "brier": 0.1, "nll": 0.4, "accuracy": 1.0})


def test_identity_alone_validates() -> None:
    ident = RunIdentity(
        encoder="pixel", dataset="chexpert", eval_dataset="mimic_cxr", seed=3, condition="shift"
    )
    assert (
        ident.key(HASH)
        == make_record(
            dataset="chexpert", eval_dataset="mimic_cxr", seed=3, condition="shift"
        ).run_key
    )
    with pytest.raises(StoreError, match="seed"):
        RunIdentity(encoder="pixel", dataset="d", eval_dataset="d", seed=True)  # type: ignore[arg-type]


def test_records_are_frozen() -> None:
    rec = make_record()
    with pytest.raises(AttributeError):
        rec.metrics = {"auroc": 0.1}  # type: ignore[misc]


def test_vectorised_keys_equal_single_keys() -> None:
    import numpy as np
    import pandas as pd

    from crsbench.store.records import keys_for_columns

    rng = np.random.default_rng(0)
    n = 300
    frame = pd.DataFrame(
        {
            "encoder": rng.choice(["pixel", "random_cnn", 'we"ird,name'], n),
            "dataset": rng.choice(["isic2019", "chexpert"], n),
            "eval_dataset": rng.choice(["isic2019", "mimic_cxr"], n),
            "seed": rng.integers(0, 5, n),
            "regime": "frozen",
            "probe": rng.choice(["logistic", "knn"], n),
            "layer": rng.choice([0.25, 0.5, 0.75, 1.0], n),
            "fraction": rng.choice([0.01, 0.1, 1.0, 0.1 + 1e-17], n),
            "condition": rng.choice(["clean", "jpeg"], n),
            "severity": rng.integers(0, 4, n),
            "recalibrator": rng.choice(["none", "isotonic"], n),
        }
    )
    fast = keys_for_columns({c: frame[c] for c in IDENTITY_COLUMNS}, HASH)
    slow = [make_run_key(row, HASH) for row in frame.to_dict("records")]
    assert fast == slow
