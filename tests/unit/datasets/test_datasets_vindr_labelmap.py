"""VinDr-CXR (official and Kaggle layouts, DICOM) and the label maps, checked by hand."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from crsbench.core.errors import DataError
from crsbench.datasets import check, load
from crsbench.datasets.chexpert import CHEXPERT_LABELS
from crsbench.datasets.labelmap import load_label_map, parse_label_map

pytest.importorskip("pydicom")
COL = {name: j for j, name in enumerate(CHEXPERT_LABELS)}
FINDINGS = ["Cardiomegaly", "Pleural effusion", "Rib fracture", "Aortic enlargement", "No finding"]
TRAIN = [  # image a: cardiomegaly by 2 of 3 readers, effusion by 1 of 3
    ["a", "R1", 1, 1, 0, 0, 0], ["a", "R2", 1, 0, 0, 1, 0], ["a", "R3", 0, 0, 0, 0, 1],
    ["b", "R4", 0, 0, 0, 0, 1], ["b", "R5", 0, 0, 1, 0, 0], ["b", "R6", 0, 0, 0, 0, 1],
]  # fmt: skip
TEST = [["t", 0, 1, 1, 0, 0]]


def test_vindr_official_majority_and_any_by_hand(tmp_path, shift):
    root = shift.vindr_official(tmp_path, TRAIN, TEST, FINDINGS)
    data = load("vindr_cxr", root)
    assert list(data.image_ids) == ["a", "b", "t"]
    assert list(data.metadata["official_split"]) == ["train", "train", "test"]
    a, b, t = data.labels
    assert (
        a[COL["Cardiomegaly"]] == 1
        and a[COL["Pleural Effusion"]] == 0
        and a[COL["No Finding"]] == 0
    )
    assert b[COL["No Finding"]] == 1 and b[COL["Fracture"]] == 0
    assert t[COL["Pleural Effusion"]] == 1 and t[COL["Fracture"]] == 1  # consensus, no vote
    anyone = load("vindr_cxr", root, radiologists="any").labels
    assert anyone[0, COL["Pleural Effusion"]] == 1 and anyone[1, COL["Fracture"]] == 1
    assert anyone[0, COL["No Finding"]] == 1  # R3 said no finding
    # only the columns on disk are provided: no Edema column here
    assert np.isnan(data.labels[:, COL["Edema"]]).all() and "Edema" not in data.provided_label_names
    assert data.paths[0].endswith("train/a.dicom") and list(data.groups) == ["a", "b", "t"]
    assert list(data.metadata["view"]) == ["PA"] * 3  # the release's description
    assert check("vindr_cxr", root, decode=True).ok
    headers = load("vindr_cxr", root, dicom_headers=True).metadata
    assert list(headers["sex"]) == ["Female"] * 3 and list(headers["age"]) == [40.0] * 3
    from crsbench.datasets.eval_rows import shift_eval_rows

    assert list(shift_eval_rows(data, "official_test")) == [2]


def test_vindr_kaggle_votes_by_hand(tmp_path, shift):
    rows = [("a", "Cardiomegaly", "R1"), ("a", "Cardiomegaly", "R1"), ("a", "Cardiomegaly", "R2"),
            ("a", "Pleural effusion", "R3"), ("b", "No finding", "R1"), ("b", "No finding", "R2"),
            ("b", "Nodule/Mass", "R3")]  # fmt: skip
    data = load("vindr_cxr", shift.vindr_kaggle(tmp_path, rows))
    assert data.labels[0, COL["Cardiomegaly"]] == 1 and data.labels[0, COL["Pleural Effusion"]] == 0
    assert data.labels[1, COL["No Finding"]] == 1 and data.labels[1, COL["Lung Lesion"]] == 0
    for name in ("Edema", "Pneumonia", "Fracture", "Support Devices"):
        assert name not in data.provided_label_names  # the Kaggle classes have none of these
    assert list(data.metadata["official_split"]) == ["train", "train"]


def test_vindr_bad_inputs_name_file_row_column(tmp_path, shift):
    bad_class = [("a", "Cardiomegally", "R1")]
    with pytest.raises(
        DataError,
        match=r"train.csv: column 'class_name' has the finding 'Cardiomegally' at data row 1",
    ):
        load("vindr_cxr", shift.vindr_kaggle(tmp_path / "k", bad_class))
    root = shift.vindr_official(tmp_path / "o", TRAIN, TEST, [*FINDINGS[:-1], "Lung nodule"])
    with pytest.raises(
        DataError,
        match=r"image_labels_train.csv: the header has the label column 'Lung nodule', which label map",
    ):
        load("vindr_cxr", root)
    root = shift.vindr_official(tmp_path / "d", [*TRAIN, TRAIN[0]], TEST, FINDINGS)
    with pytest.raises(DataError, match=r"\(image_id, rad_id\) must be unique. Got \('a', 'R1'\)"):
        load("vindr_cxr", root)
    root = shift.vindr_official(tmp_path / "m", TRAIN, TEST, FINDINGS)
    (root / "test" / "t.dicom").unlink()
    with pytest.raises(DataError, match=r"1 of 3 images listed .* row 3: .*test/t.dicom"):
        load("vindr_cxr", root)
    (root / "test" / "t.dicom").write_bytes(b"not a dicom at all" * 20)
    report = check("vindr_cxr", root)
    assert report.problem_counts == {"not_an_image": 1}
    assert "t.dicom is not a DICOM file" in report.file_problems[0].message


def test_vindr_layout_choice(tmp_path, shift):
    shift.vindr_official(tmp_path, TRAIN, TEST, FINDINGS)
    shift.vindr_kaggle(tmp_path, [("a", "Cardiomegaly", "R1")])
    with pytest.raises(DataError, match="holds both VinDr layouts"):
        load("vindr_cxr", tmp_path)
    assert len(load("vindr_cxr", tmp_path, layout="kaggle")) == 1


def test_packaged_maps_cover_the_14_labels_and_state_what_is_missing():
    nih, pc, vd = (load_label_map(n) for n in ("nih_cxr14_v1", "padchest_v1", "vindr_cxr_v1"))
    assert nih.labels["Pleural Effusion"] == ("Effusion",)
    assert set(nih.labels["Lung Lesion"]) == {"Mass", "Nodule"}
    assert set(nih.not_provided) == {"Enlarged Cardiomediastinum", "Fracture", "Support Devices"}
    assert pc.provided() == CHEXPERT_LABELS and len(pc.known()) == 193
    assert set(vd.not_provided) == {"Enlarged Cardiomediastinum", "Support Devices"}
    for m in (nih, pc, vd):
        assert m.source and m.version == 1


def _map(**changes):
    base = yaml.safe_load(
        "format: crsbench-label-map\ndataset: x\nversion: 1\nsource: s\n"
        "labels: {No Finding: [ok], Cardiomegaly: [big heart]}\nignored: [noise]\n"
    )
    base["not_provided"] = {k: "n/a" for k in CHEXPERT_LABELS if k not in base["labels"]}
    base.update(changes)
    return base


def test_map_validation_errors_name_the_file():
    parsed = parse_label_map(_map(), "m.yaml")
    assert parsed.provided() == ("No Finding", "Cardiomegaly")
    with pytest.raises(DataError, match=r"label map m.yaml: .*missing \['Cardiomegaly'\]"):
        parse_label_map(_map(labels={"No Finding": ["ok"]}), "m.yaml")
    with pytest.raises(
        DataError, match=r"m.yaml: findings \['Big Heart'\] are both mapped and ignored"
    ):
        parse_label_map(_map(ignored=["Big Heart"]), "m.yaml")
    with pytest.raises(DataError, match="does not exist"):
        load_label_map("nih_cxr14_v99")
