"""MIMIC-CXR-JPG join (cardinality, orphans, splits, gzip) and the bring-your-own folder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from crsbench.core.errors import DataError
from crsbench.datasets import load


def _cells(*values: str) -> list[str]:
    return [*values, *([""] * (14 - len(values)))]


STUDIES = [
    (10000032, 50414267, _cells("1.0", "-1.0")),
    (10000032, 53189527, _cells("0.0", "", "1.0")),
    (11000011, 51000001, _cells("", "1.0")),
]
IMAGES = [
    ("d1", 10000032, 50414267, "PA", "train"),
    ("d2", 10000032, 50414267, "LATERAL", "train"),
    ("d3", 10000032, 53189527, "AP", "validate"),
    ("d4", 11000011, 51000001, "PA", "test"),
]


@pytest.mark.parametrize("gz", [False, True])
def test_mimic_join_splits_paths_and_policy(tmp_path: Path, writers, gz: bool) -> None:
    root = writers.mimic(tmp_path, STUDIES, IMAGES, gz=gz)
    data = load("mimic_cxr", root)
    assert list(data.image_ids) == ["d1", "d3", "d4"]  # lateral d2 filtered out
    assert list(data.metadata["official_split"]) == ["train", "valid", "test"]
    assert list(data.groups) == ["10000032", "10000032", "11000011"]
    assert data.paths[0].endswith("files/p10/p10000032/s50414267/d1.jpg")
    # label columns are reordered to the canonical CheXpert order
    assert data.label_names[0] == "No Finding" and data.labels[0, 0] == 1.0
    assert np.isnan(data.labels[0, 1]) and data.labels[1, 2] == 1.0 and data.labels[2, 1] == 1.0
    assert load("mimic_cxr", root, uncertainty="ones").labels[0, 1] == 1.0
    assert load("mimic_cxr", root, frontal_only=False).image_ids.tolist() == [
        "d1", "d2", "d3", "d4"
    ]  # fmt: skip


def test_mimic_duplicate_label_rows_abort(tmp_path: Path, writers) -> None:
    root = writers.mimic(tmp_path, [*STUDIES, STUDIES[0]], IMAGES)
    with pytest.raises(DataError, match=r"\(subject_id, study_id\) must be unique.*rows 1, 4"):
        load("mimic_cxr", root)


def test_mimic_orphans_counted_and_thresholded(tmp_path: Path, writers) -> None:
    images = [*IMAGES, ("d5", 12000000, 52000000, "PA", "train")]  # study with no label row
    studies = [*STUDIES, (13000000, 53000000, _cells("1.0"))]  # label row with no image
    root = writers.mimic(tmp_path, studies, images)
    with pytest.raises(DataError, match=r"25.0% of the images are orphans \(1 image"):
        load("mimic_cxr", root)
    data = load("mimic_cxr", root, max_orphan_fraction=0.5)
    assert "d5" not in data.image_ids and len(data) == 3
    assert any("dropped 1 orphan" in n for n in data.notes)
    assert any("1 label row(s)" in n for n in data.notes)


def test_mimic_missing_split_row_and_bad_split_value(tmp_path: Path, writers) -> None:
    root = writers.mimic(tmp_path, STUDIES, IMAGES)
    split = root / "mimic-cxr-2.0.0-split.csv"
    lines = split.read_text().splitlines()
    split.write_text("\n".join(line for line in lines if not line.startswith("d4,")) + "\n")
    data = load("mimic_cxr", root, max_orphan_fraction=0.5)
    assert "d4" not in data.image_ids
    split.write_text("\n".join(lines).replace("validate", "val") + "\n")
    with pytest.raises(
        DataError, match=r"'split' must be one of .*Got 'val' instead at data row 3"
    ):
        load("mimic_cxr", root)


def test_mimic_missing_files(tmp_path: Path, writers) -> None:
    root = writers.mimic(tmp_path, STUDIES, IMAGES, images_on_disk=False)
    with pytest.raises(DataError, match=r"3 of 3 images .*missing"):
        load("mimic_cxr", root)
    with pytest.raises(DataError, match="mimic-cxr-2.0.0-negbio.csv"):
        load("mimic_cxr", root, label_source="negbio", check_files=False)


def _folder(root: Path, writers, header: str, rows: list[str]) -> Path:
    for row in rows:
        writers_path = root / row.split(",")[0]
        writers_path.parent.mkdir(parents=True, exist_ok=True)
        writers_path.write_bytes(b"x")
    (root / "labels.csv").write_text(header + "\n" + "\n".join(rows) + "\n")
    return root


def test_folder_multiclass_with_groups(tmp_path: Path, writers) -> None:
    rows = ["img/a.png,10,p1,F", "img/b.png,2,p1,M", "img/c.png,10,p2,F"]
    root = _folder(tmp_path, writers, "path,grade,patient,sex", rows)
    data = load("folder", root, label_columns=["grade"], group_column="patient")
    assert data.task == "multiclass" and data.label_names == ("2", "10")
    np.testing.assert_array_equal(data.class_indices(), [1, 0, 1])
    assert list(data.groups) == ["p1", "p1", "p2"] and list(data.metadata["sex"]) == ["F", "M", "F"]
    assert data.paths[0] == str(root / "img" / "a.png")


def test_folder_multilabel_and_missing_policy(tmp_path: Path, writers) -> None:
    rows = ["a.png,1,0", "b.png,0,1", "c.png,1,"]
    root = _folder(tmp_path, writers, "path,effusion,edema", rows)
    with pytest.raises(DataError, match=r"'edema' must be 0 or 1 .*data row 3"):
        load("folder", root)
    data = load("folder", root, missing="mask")
    assert data.task == "multilabel" and data.label_names == ("effusion", "edema")
    np.testing.assert_array_equal(np.isnan(data.labels), [[0, 0], [0, 0], [0, 1]])
    (root / "labels.csv").write_text("path,effusion,edema\na.png,1,yes\n")
    with pytest.raises(DataError, match=r"Got 'yes' instead at data row 1"):
        load("folder", root)


def test_folder_no_labels_absolute_paths_and_missing(tmp_path: Path, writers) -> None:
    image = tmp_path / "abs.png"
    image.write_bytes(b"x")
    (tmp_path / "labels.csv").write_text(f"path\n{image}\n")
    with pytest.raises(DataError, match="no label columns"):
        load("folder", tmp_path)
    (tmp_path / "labels.csv").write_text(f"path,label\n{image},cat\nmissing.png,dog\n")
    with pytest.raises(DataError, match=r"1 of 2 images .*missing.*row 2"):
        load("folder", tmp_path)
    data = load("folder", tmp_path, check_files=False)
    assert data.paths[0] == str(image) and data.label_names == ("cat", "dog")
