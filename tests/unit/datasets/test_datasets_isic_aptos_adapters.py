"""ISIC 2019 and APTOS 2019 adapters: labels, groups, name variants, bad inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from crsbench.core.errors import DataError
from crsbench.datasets import DATASETS, load

CLASSES = ("MEL", "NV", "BCC", "AK", "BKL", "DF", "VASC", "SCC")


def test_isic_one_hot_labels_groups_and_metadata(tmp_path: Path, writers) -> None:
    classes = ["NV", "MEL", "SCC", "NV", "VASC"]
    root = writers.isic(tmp_path, classes)
    data = load("isic2019", root)
    assert data.label_names == CLASSES and data.task == "multiclass"
    assert data.labels.shape == (5, 8)
    np.testing.assert_array_equal(data.class_indices(), [CLASSES.index(c) for c in classes])
    np.testing.assert_array_equal(data.labels.sum(axis=1), 1.0)
    assert list(data.groups) == ["lesion_0", "lesion_0", "lesion_1", "lesion_1", "lesion_2"]
    assert list(data.metadata["age"]) == [30.0, 35.0, 40.0, 45.0, 50.0]
    assert "official_split" not in data.metadata.columns
    assert not DATASETS.get("isic2019").card.ordinal


def test_isic_groups_fall_back_to_image_id(tmp_path: Path, writers) -> None:
    root = writers.isic(tmp_path, ["NV", "MEL"], metadata=False)
    data = load("isic2019", root)
    np.testing.assert_array_equal(data.groups, data.image_ids)
    meta = root / "ISIC_2019_Training_Metadata.csv"
    meta.write_text("image,age_approx,lesion_id,sex\nISIC_0000000,55,,female\n")
    data = load("isic2019", root)
    assert list(data.groups) == ["ISIC_0000000", "ISIC_0000001"]
    assert any("no row" in note for note in data.notes)


def test_isic_downsampled_names_resolve_both_ways(tmp_path: Path, writers) -> None:
    root = writers.isic(tmp_path, ["NV", "MEL", "BCC"])
    images = root / "ISIC_2019_Training_Input"
    (images / "ISIC_0000000.jpg").rename(images / "ISIC_0000000_downsampled.jpg")
    gt = root / "ISIC_2019_Training_GroundTruth.csv"
    gt.write_text(gt.read_text().replace("ISIC_0000001,", "ISIC_0000001_downsampled,"))
    data = load("isic2019", root)
    assert data.paths[0].endswith("ISIC_0000000_downsampled.jpg")
    assert data.paths[1].endswith("ISIC_0000001.jpg")
    assert data.image_ids[1] == "ISIC_0000001_downsampled"
    assert data.groups[1] == "lesion_0"  # metadata joined despite the suffix


def test_isic_nested_input_folder(tmp_path: Path, writers) -> None:
    root = writers.isic(tmp_path, ["NV", "MEL"])
    flat = root / "ISIC_2019_Training_Input"
    nested = flat / "ISIC_2019_Training_Input"
    nested.mkdir()
    for p in flat.glob("*.jpg"):
        p.rename(nested / p.name)
    assert all(str(nested) in p for p in load("isic2019", root).paths)


@pytest.mark.parametrize(
    ("edit", "pattern"),
    [
        ({"NV": "0.0"}, r"exactly one 1 .* Got 0 at data row 2 .*ISIC_0000001"),
        ({"MEL": "1.0"}, r"exactly one 1 .* Got 2 at data row 2"),
        ({"NV": "0.5"}, r"column 'NV' must be one of .* Got '0.5' instead at data row 2"),
        ({"UNK": "1.0"}, r"column 'UNK' must be 0 \(UNK has no images\)"),
    ],
)
def test_isic_bad_rows(tmp_path: Path, writers, edit, pattern) -> None:
    root = writers.isic(tmp_path, ["MEL", "NV", "BCC"])
    gt = root / "ISIC_2019_Training_GroundTruth.csv"
    lines = gt.read_text().splitlines()
    header = lines[0].split(",")
    cells = lines[2].split(",")
    for column, value in edit.items():
        cells[header.index(column)] = value
    lines[2] = ",".join(cells)
    gt.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=pattern):
        load("isic2019", root)


def test_isic_duplicate_ids_and_missing_images(tmp_path: Path, writers) -> None:
    root = writers.isic(tmp_path, ["MEL", "NV", "BCC"])
    gt = root / "ISIC_2019_Training_GroundTruth.csv"
    text = gt.read_text()
    gt.write_text(text + text.splitlines()[1] + "\n")
    with pytest.raises(DataError, match=r"'image' must be unique.*'ISIC_0000000'.*rows 1, 4"):
        load("isic2019", root)
    gt.write_text(text)
    (root / "ISIC_2019_Training_Input" / "ISIC_0000002.jpg").unlink()
    with pytest.raises(DataError, match=r"1 of 3 images .*missing.*row 3: .*ISIC_0000002\.jpg"):
        load("isic2019", root)


def test_aptos_labels_ordinal_and_id_normalisation(tmp_path: Path, writers) -> None:
    root = writers.aptos(tmp_path, [0, 4, 2, 2, 1])
    csv = root / "train.csv"
    lines = csv.read_text().splitlines()
    lines[1] = lines[1].replace("000000000000", " 000000000000.png ")
    csv.write_text("\r\n".join(lines) + "\r\n")
    data = load("aptos2019", root)
    assert data.card.ordinal and data.task == "multiclass" and data.labels.shape == (5, 5)
    np.testing.assert_array_equal(data.class_indices(), [0, 4, 2, 2, 1])
    assert data.image_ids[0] == "000000000000"
    assert data.paths[0].endswith("train_images/000000000000.png")


@pytest.mark.parametrize("bad", ["5", "-1", "2.5", "two", ""])
def test_aptos_bad_diagnosis(tmp_path: Path, writers, bad) -> None:
    root = writers.aptos(tmp_path, [0, 1, bad, 3])
    with pytest.raises(DataError, match=r"'diagnosis' must be an integer grade.*data row 3"):
        load("aptos2019", root)


def test_aptos_unlabelled_csv_and_duplicates(tmp_path: Path, writers) -> None:
    root = writers.aptos(tmp_path, [0, 1])
    (root / "test.csv").write_text("id_code\n000000000000\n")
    with pytest.raises(DataError, match="column 'diagnosis' absent"):
        load("aptos2019", root, csv="test.csv")
    (root / "train.csv").write_text("id_code,diagnosis\n000000000000,1\n000000000000.png,2\n")
    with pytest.raises(DataError, match="must be unique"):
        load("aptos2019", root)
