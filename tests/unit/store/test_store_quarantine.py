"""Quarantined images in the run records (details['n_quarantined']), the store and the report."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from store_helpers import HASH, make_frame, make_record

from crsbench.core.errors import StoreError
from crsbench.report.left_out_images import quarantine_lines
from crsbench.runs.cell_inputs import quarantine_entries
from crsbench.runs.progress import quarantine_line
from crsbench.store.quarantine import quarantine_frame, record_quarantine
from crsbench.store.writer import ResultsStore

COUNTS = {"train": 1, "val": 0, "calib": 2, "test": 1}


def test_records_validate_the_counts() -> None:
    rec = make_record(details={"n_quarantined": COUNTS})
    assert json.loads(rec.to_row()["details"])["n_quarantined"] == COUNTS
    with pytest.raises(StoreError, match=r"keys must be among .* Got 'validation'"):
        make_record(details={"n_quarantined": {"validation": 1}})
    with pytest.raises(StoreError, match=r"\['train'\] must be an int >= 0. Got -1"):
        make_record(details={"n_quarantined": {"train": -1}})
    with pytest.raises(StoreError, match="must be an int >= 0. Got True"):
        make_record(details={"n_quarantined": {"test": True}})


def test_bulk_validation_and_export_carry_the_counts(tmp_path: Path) -> None:
    frame = make_frame(4)
    frame["details"] = json.dumps({"n_quarantined": COUNTS})
    frame.loc[2, "details"] = json.dumps({"n_quarantined": {"train": 1.5}})
    with ResultsStore(tmp_path, HASH) as store:
        with pytest.raises(StoreError, match=r"n_quarantined'\] must map .*rows 3;"):
            store.append_frame(frame)
        frame.loc[2, "details"] = json.dumps({"n_quarantined": COUNTS})
        assert store.append_frame(frame) == 4
        files = store.export("csv", tmp_path / "export")
    exported = pd.read_csv(files["runs"])
    assert all(json.loads(t)["n_quarantined"] == COUNTS for t in exported["details"])


def _entry(image_id: str, split: str = "train", path: str = "/d/[b]x.jpg") -> dict[str, str]:
    return {"dataset": "isic2019", "split": split, "image_id": image_id, "path": path,
            "error_class": "truncated", "message": "image file is truncated"}  # fmt: skip


def test_store_table_keeps_each_image_once(tmp_path: Path) -> None:
    with ResultsStore(tmp_path, HASH) as store:
        assert quarantine_frame(store.con).empty  # a store written before the table
        assert record_quarantine(store, [_entry("a"), _entry("b", "test")]) == 2
        assert record_quarantine(store, [_entry("a"), _entry("c", "val")]) == 1
    with ResultsStore(tmp_path, HASH, mode="r") as store:
        frame = quarantine_frame(store.con)
        with pytest.raises(StoreError, match="read-only"):
            record_quarantine(store, [_entry("d")])
    assert frame[["split", "image_id"]].values.tolist() == [
        ["test", "b"], ["train", "a"], ["val", "c"],
    ]  # fmt: skip


def test_entries_name_split_path_and_reason() -> None:
    ids = np.array(["a", "b", "c", "d"])
    split = np.array(["train", "val", "test", "train"], dtype=object)
    keep = np.array([True, False, True, False])
    reported = [{"image_id": "b", "path": "/d/b.jpg", "error_class": "missing", "message": "m"}]
    out = quarantine_entries("isic2019", ids, split, keep, reported)
    assert [(e["image_id"], e["split"], e["path"], e["error_class"]) for e in out] == [
        ("b", "val", "/d/b.jpg", "missing"), ("d", "train", "", "no_features"),
    ]  # fmt: skip
    line = quarantine_line(_entry("a"))
    assert line.startswith("quarantined isic2019 train image a: /d/[b]x.jpg (truncated: ")


def test_report_line_per_dataset() -> None:
    runs = pd.DataFrame(
        {
            "dataset": ["isic2019", "isic2019", "chexpert", "aptos2019"],
            "details": [
                json.dumps({"n_quarantined": COUNTS}),
                json.dumps({"n_quarantined": {**COUNTS, "train": 0}}),
                json.dumps(
                    {"n_quarantined": {"train": 0, "val": 0, "calib": 0, "test": 0, "shift": 2}}
                ),  # fmt: skip
                json.dumps({"C": 1.0}),
            ],
        }
    )
    assert quarantine_lines(runs) == [
        "aptos2019: quarantined images not recorded",
        "chexpert: 0 image(s) quarantined (train 0, val 0, calib 0, test 0, shift 2)",
        "isic2019: 4 image(s) quarantined (train 1, val 0, calib 2, test 1)",
    ]
