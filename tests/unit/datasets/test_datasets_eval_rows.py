"""Which rows of a shift target are evaluated: the official test split (frontal) or all frontal."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from crsbench.core.errors import DataError
from crsbench.datasets import load
from crsbench.datasets.eval_rows import shift_eval_rows
from crsbench.runs.prepare import prepare_shift_target


def _cells(*values: str) -> list[str]:
    return [*values, *([""] * (14 - len(values)))]


# Three patients; every official split and view appears. Frontal test images: t1 (AP, patient
# 10000001), t3 (PA, patient 12000003), t4 (PA, 12000003); t2 is a lateral test image.
STUDIES = [
    (10000001, 50000001, _cells("1.0")),
    (10000001, 50000002, _cells("0.0", "1.0")),
    (11000002, 51000001, _cells("", "1.0")),
    (12000003, 52000001, _cells("1.0")),
    (12000003, 52000002, _cells("0.0")),
]
IMAGES = [
    ("a1", 10000001, 50000001, "PA", "train"),
    ("a2", 10000001, 50000001, "LATERAL", "train"),
    ("t1", 10000001, 50000002, "AP", "test"),
    ("t2", 10000001, 50000002, "LL", "test"),
    ("v1", 11000002, 51000001, "PA", "validate"),
    ("t3", 12000003, 52000001, "PA", "test"),
    ("t4", 12000003, 52000002, "PA", "test"),
]


@pytest.fixture
def mimic_root(tmp_path: Path, writers) -> Path:
    return writers.mimic(tmp_path / "mimic", STUDIES, IMAGES)


def _ids(data, rows: np.ndarray) -> list[str]:
    return sorted(data.image_ids[rows].tolist())


def test_official_test_keeps_the_frontal_test_images(mimic_root: Path) -> None:
    data = load("mimic_cxr", mimic_root)
    assert _ids(data, shift_eval_rows(data, "official_test")) == ["t1", "t3", "t4"]


def test_all_frontal_keeps_every_frontal_image(mimic_root: Path) -> None:
    data = load("mimic_cxr", mimic_root)
    assert _ids(data, shift_eval_rows(data, "all_frontal")) == ["a1", "t1", "t3", "t4", "v1"]


def test_laterals_stay_out_when_the_adapter_keeps_them(mimic_root: Path) -> None:
    data = load("mimic_cxr", mimic_root, frontal_only=False)
    assert len(data) == 7
    assert _ids(data, shift_eval_rows(data, "official_test")) == ["t1", "t3", "t4"]
    assert _ids(data, shift_eval_rows(data, "all_frontal")) == ["a1", "t1", "t3", "t4", "v1"]


def test_a_target_without_test_images_is_refused(tmp_path: Path, writers) -> None:
    images = [im for im in IMAGES if im[4] != "test"]
    studies = [s for s in STUDIES if s[1] in {im[2] for im in images}]
    data = load("mimic_cxr", writers.mimic(tmp_path / "m", studies, images))
    with pytest.raises(DataError, match=r"'mimic_cxr': rows: official_test selects no image"):
        shift_eval_rows(data, "official_test")
    assert _ids(data, shift_eval_rows(data, "all_frontal")) == ["a1", "v1"]


def test_a_target_without_an_official_split_is_refused(tmp_path: Path, writers) -> None:
    root = writers.isic(tmp_path / "isic", ["MEL", "NV", "MEL"])
    data = load("isic2019", root)
    with pytest.raises(DataError, match=r"'isic2019' has no official split.*rows: all_frontal"):
        shift_eval_rows(data, "official_test")
    assert len(shift_eval_rows(data, "all_frontal")) == 3  # no view column: every image


def test_the_cap_applies_to_the_evaluation_rows_by_whole_patients(mimic_root: Path) -> None:
    data = load("mimic_cxr", mimic_root)
    full = prepare_shift_target(data, "official_test", None)
    assert _ids(data, full.eval_rows) == ["t1", "t3", "t4"] and full.splits is None
    capped = prepare_shift_target(data, "official_test", 2)
    ids = _ids(data, capped.eval_rows)
    assert ids in (["t1"], ["t3", "t4"])  # whole patients, only test images


def test_provenance_counts_the_scored_images_and_patients(mimic_root: Path) -> None:
    data = load("mimic_cxr", mimic_root)
    prep = prepare_shift_target(data, "official_test", None)
    assert prep.eval_rows_choice == "official_test"
    assert prep.shift_provenance(np.ones(3, dtype=bool)) == {
        "rows": "official_test",
        "n_images": 3,
        "n_patients": 2,
    }
    # t1 did not decode: two images of one patient were scored
    scored = data.image_ids[prep.eval_rows] != "t1"
    assert prep.shift_provenance(scored) == {
        "rows": "official_test",
        "n_images": 2,
        "n_patients": 1,
    }
    every = prepare_shift_target(data, "all_frontal", None)
    assert every.shift_provenance(np.ones(5, dtype=bool)) == {
        "rows": "all_frontal",
        "n_images": 5,
        "n_patients": 3,
    }
