"""The synthetic shift targets are written in the real NIH, PadChest and VinDr layouts."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from PIL import Image

from .conftest import TINY


def _rows(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def test_nih_layout_8bit_pngs_in_images_folders_and_split_lists(tiny_out):
    root = tiny_out / "nih_cxr14"
    rows = _rows(root / "Data_Entry_2017_v2020.csv")
    assert rows[0][:7] == ["Image Index", "Finding Labels", "Follow-up #", "Patient ID",
                           "Patient Age", "Patient Gender", "View Position"]  # fmt: skip
    assert len(rows) - 1 == TINY["nih_cxr14"]
    pngs = sorted(root.glob("images_*/images/*.png"))
    assert len(pngs) == TINY["nih_cxr14"] and Image.open(pngs[0]).mode == "L"
    listed = (root / "train_val_list.txt").read_text().split() + (
        root / "test_list.txt"
    ).read_text().split()
    assert sorted(listed) == sorted(r[0] for r in rows[1:])


def test_padchest_layout_16bit_pngs_in_imagedir_folders(tiny_out):
    root = tiny_out / "padchest"
    rows = _rows(root / "PADCHEST_chest_x_ray_images_labels_160K_01.02.19.csv")
    header, body = rows[0], rows[1:]
    assert len(header) == 35 and {"ImageID", "ImageDir", "Projection", "Labels"} <= set(header)
    col = {name: j for j, name in enumerate(header)}
    first = root / body[0][col["ImageDir"]] / body[0][col["ImageID"]]
    image = Image.open(first)
    assert image.mode.startswith("I;16") and 255 < np.asarray(image).max() <= 4095
    assert {r[col["Projection"]] for r in body} & {"L"}  # laterals are in the release too


def test_vindr_official_layout_dicom_mix(tiny_out):
    pydicom = pytest.importorskip("pydicom")
    root = tiny_out / "vindr_cxr"
    train = _rows(root / "annotations" / "image_labels_train.csv")
    test = _rows(root / "annotations" / "image_labels_test.csv")
    assert train[0][:2] == ["image_id", "rad_id"] and len(train[0]) == 30
    assert test[0][0] == "image_id" and "Other disease" in test[0]
    files = sorted(root.glob("*/*.dicom"))
    assert len(files) == TINY["vindr_cxr"]
    kinds = {str(pydicom.dcmread(f).PhotometricInterpretation) for f in files}
    assert kinds == {"MONOCHROME1", "MONOCHROME2"}
    ids = {r[0] for r in train[1:]}
    assert all(sum(r[0] == i for r in train[1:]) == 3 for i in ids)  # three readers per image


def test_each_hospital_has_its_own_look(tiny_out):
    from crsbench.datasets import load
    from crsbench.features.decode import decode_image

    def mean_grey(name):
        data = load(name, tiny_out / name)
        return np.mean([decode_image(p, 32).mean() for p in data.paths[:10]])

    means = {name: mean_grey(name) for name in ("chexpert", "nih_cxr14", "vindr_cxr")}
    assert len({round(m) for m in means.values()}) == 3, means
