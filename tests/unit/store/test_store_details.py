"""The typed ``details`` of a run record: each section writes exactly the keys the store holds,
reads them back, and refuses a key no section declares; a run result names every metric."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from crsbench.core.errors import StoreError
from crsbench.store.columns import METRIC_COLUMNS
from crsbench.store.details import (
    ControlFit,
    LayerFit,
    LogisticFit,
    LoraAdapters,
    LoraFit,
    RecalDetails,
    ReliabilityBins,
    RunDetails,
    ScoreDetails,
    ShiftDetails,
)
from crsbench.store.records import RunIdentity, details_json
from crsbench.store.run_result import RunResult

SCORE = ScoreDetails(n_eval=12, excluded={"2": "needs both classes"}, n_pos=(3, 4, 0))
LOGISTIC = LogisticFit(C=0.1, val_auroc=None, n_train=40, n_iter=17, converged=True,
                       flags=("constant features",), skipped={})  # fmt: skip
ADAPTERS = LoraAdapters(rank=8, alpha=16.0, dropout=0.1, epochs=1, targets=("qkv", "proj"),
                        targets_source="card")  # fmt: skip
LORA_FIT = LoraFit(lr=1e-3, best_epoch=1, val_auroc=0.7, n_train=30,
                   val_auroc_by_lr={"0.001": 0.7}, epochs_run={"0.001": 1})  # fmt: skip
FULL = RunDetails(
    score=SCORE,
    fit=LOGISTIC,
    shift=ShiftDetails(
        shift_rows={"choice": "test", "n_images": 9},
        eval_dataset_revision="r1",
        shift_labels={"compared": ["a"], "not_compared": ["b"]},
    ),  # fmt: skip
    recal=RecalDetails(n_calib=60, recal={"choice": "fitted"}, recal_choice="fitted"),
    reliability=ReliabilityBins(bin=(0, 14), conf=(0.01, 0.97), acc=(0.0, 1.0), count=(5, 7)),
    undefined={"auroc": "no positives"},
    n_quarantined={"test": 2},
    precision={"precision": "fp32", "checked": False},
)


def test_the_stored_object_is_the_union_of_the_sections_key_for_key():
    got = FULL.as_json()
    assert got == {
        "n_eval": 12, "excluded": {"2": "needs both classes"}, "n_pos": [3, 4, 0],
        "C": 0.1, "val_auroc": None, "n_train": 40, "n_iter": 17, "converged": True,
        "flags": ["constant features"], "skipped": {},
        "shift_rows": {"choice": "test", "n_images": 9}, "eval_dataset_revision": "r1",
        "shift_labels": {"compared": ["a"], "not_compared": ["b"]},
        "n_calib": 60, "recal": {"choice": "fitted"}, "recal_choice": "fitted",
        "reliability": {"bin": [0, 14], "conf": [0.01, 0.97], "acc": [0.0, 1.0], "count": [5, 7]},
        "undefined": {"auroc": "no positives"}, "n_quarantined": {"test": 2},
        "precision": {"precision": "fp32", "checked": False},
    }  # fmt: skip
    # optional keys appear only when set; the aliased one under its stored name
    assert "warnings" not in got and "suspicious_auroc_0.5" not in got
    flagged = ScoreDetails(n_eval=1, excluded={}, n_pos=(1,), suspicious=(0,), warnings=("w",))
    assert flagged.as_json()["suspicious_auroc_0.5"] == [0]
    assert RunDetails().as_json() == {}
    assert RunDetails(fit=ControlFit(n_train=5)).as_json() == {"n_train": 5}
    lora = RunDetails(lora=ADAPTERS, fit=LORA_FIT).as_json()
    assert lora["lora"] == {"rank": 8, "alpha": 16.0, "dropout": 0.1, "epochs": 1,
                            "targets": ["qkv", "proj"], "targets_source": "card"}  # fmt: skip
    assert lora["lr"] == 1e-3 and lora["val_auroc_by_lr"] == {"0.001": 0.7}


@pytest.mark.parametrize(
    "details",
    [
        FULL,
        RunDetails(score=SCORE, fit=LayerFit(C=1.0, n_iter=3, val_auroc=0.8)),
        RunDetails(score=SCORE, fit=ControlFit(n_train=7), shift=ShiftDetails(shift_rows={})),
        RunDetails(lora=ADAPTERS, fit=LORA_FIT, undefined=dict.fromkeys(METRIC_COLUMNS, "x")),
        RunDetails(score=ScoreDetails(n_eval=1, excluded={}, n_pos=(1,), warnings=("w",))),
    ],
)
def test_each_kind_of_details_reads_back_as_it_was_written(details):
    text = details_json(details.as_json())
    again = RunDetails.from_json(json.loads(text))
    assert again == details
    assert details_json(again.as_json()) == text


def test_a_key_no_section_declares_or_an_unknown_fit_is_refused():
    with pytest.raises(StoreError, match=r"no section declares: \['colour'\]"):
        RunDetails.from_json({"n_eval": 1, "colour": "red"})
    with pytest.raises(StoreError, match="match no kind of probe fit"):
        RunDetails.from_json({"C": 1.0, "n_train": 3})  # half a logistic fit
    with pytest.raises(StoreError, match=r"ScoreDetails lacks the keys \['excluded'\]"):
        RunDetails.from_json({"n_eval": 3, "n_pos": [1]})


def test_merging_sets_sections_and_joins_the_shift_keys():
    rows = RunDetails(fit=ControlFit(n_train=3), shift=ShiftDetails(shift_rows={"n": 1}))
    labels = RunDetails(shift=ShiftDetails(shift_labels={"compared": ["a"]}))
    merged = rows.merged(labels).merged(RunDetails(score=SCORE))
    assert merged.fit == ControlFit(n_train=3) and merged.score == SCORE
    assert merged.shift == ShiftDetails(shift_rows={"n": 1}, shift_labels={"compared": ["a"]})
    assert rows.merged(RunDetails()) is rows
    assert FULL.merged(RunDetails(fit=ControlFit(n_train=1))).fit == ControlFit(n_train=1)


def _identity() -> RunIdentity:
    return RunIdentity(encoder="e", dataset="d", eval_dataset="d", seed=0)


def test_a_run_result_names_exactly_the_metric_columns_and_is_never_changed_in_place():
    metrics = dict.fromkeys(METRIC_COLUMNS, 0.5)
    result = RunResult(_identity(), metrics, RunDetails(score=SCORE), 0.1)
    with pytest.raises(StoreError, match=r"Missing \['nll'\], unexpected \['accuracy'\]"):
        RunResult(_identity(), {**{m: 0.5 for m in METRIC_COLUMNS if m != "nll"},
                                "accuracy": 0.5}, RunDetails(), 0.1)  # fmt: skip
    with pytest.raises(AttributeError):
        result.wall_time_s = 2.0  # type: ignore[misc]
    counted = result.with_details(n_quarantined={"test": 1})
    assert result.details.n_quarantined == {} and counted.details.n_quarantined == {"test": 1}
    kept = counted.with_prediction("test", object(), np.zeros(2))  # type: ignore[arg-type]
    assert result.predictions == {} and list(kept.predictions) == ["test"]
    assert math.isclose(kept.metrics["auroc"], 0.5) and kept.details.score == SCORE
