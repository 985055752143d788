"""Exact file names, CSV headers, value domains, path formats and image modes."""

from __future__ import annotations

import csv
import re

import pytest
from PIL import Image

from crsbench.core.errors import ConfigError, DataError
from crsbench.datasets.synthetic import resolve_size, write_all, write_isic2019
from crsbench.datasets.synthetic.cxr_labels import CHEXPERT_LABELS, MIMIC_LABELS

from .conftest import TINY


def _read(path):
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    return rows[0], rows[1:]


def test_isic_layout(tiny_out):
    root = tiny_out / "isic2019"
    header, rows = _read(root / "ISIC_2019_Training_GroundTruth.csv")
    assert header == "image,MEL,NV,BCC,AK,BKL,DF,VASC,SCC,UNK".split(",")
    assert len(rows) == TINY["isic2019"]
    for row in rows:
        assert re.fullmatch(r"ISIC_\d{7}", row[0])
        assert set(row[1:]) <= {"1.0", "0.0"} and row[1:].count("1.0") == 1 and row[-1] == "0.0"
        with Image.open(root / "ISIC_2019_Training_Input" / f"{row[0]}.jpg") as im:
            assert im.format == "JPEG" and im.mode == "RGB" and im.size == (64, 48)
    counts = {c: sum(r[i + 1] == "1.0" for r in rows) for i, c in enumerate(header[1:9])}
    assert max(counts, key=counts.get) == "NV" and min(counts.values()) >= 2
    mheader, meta = _read(root / "ISIC_2019_Training_Metadata.csv")
    assert mheader == ["image", "age_approx", "anatom_site_general", "lesion_id", "sex"]
    assert [m[0] for m in meta] == [r[0] for r in rows]
    lesions = [m[3] for m in meta if m[3]]
    assert all(re.fullmatch(r"(HAM|BCN)_\d{7}", x) for x in lesions)
    assert len(set(lesions)) < len(lesions)  # several images per lesion
    assert all(m[1] == "" or re.fullmatch(r"\d+\.0", m[1]) for m in meta)
    assert {m[4] for m in meta} <= {"male", "female", ""}


def test_aptos_layout(tiny_out):
    root = tiny_out / "aptos2019"
    header, rows = _read(root / "train.csv")
    assert header == ["id_code", "diagnosis"] and len(rows) == TINY["aptos2019"]
    assert all(re.fullmatch(r"[0-9a-f]{12}", r[0]) for r in rows)
    assert {r[1] for r in rows} == {"0", "1", "2", "3", "4"}
    assert len(list((root / "train_images").glob("*.png"))) == len(rows)
    with Image.open(root / "train_images" / f"{rows[0][0]}.png") as im:
        assert im.format == "PNG" and im.mode == "RGB" and im.size == (64, 48)


def test_chexpert_layout(tiny_out):
    base = tiny_out / "chexpert"
    expected = ["Path", "Sex", "Age", "Frontal/Lateral", "AP/PA", *CHEXPERT_LABELS]
    for split, n in (("train", TINY["chexpert_train"]), ("valid", TINY["chexpert_valid"])):
        header, rows = _read(base / "CheXpert-v1.0-small" / f"{split}.csv")
        assert header == expected and len(rows) == n
        pattern = (
            rf"CheXpert-v1\.0-small/{split}/patient\d{{5}}/study\d+/view(1_frontal|2_lateral)\.jpg"
        )
        for row in rows:
            assert re.fullmatch(pattern, row[0])
            assert row[1] in ("Male", "Female") and row[2].isdigit()
            assert (row[3], row[4] in ("AP", "PA")) in (("Frontal", True), ("Lateral", False))
            assert (row[3] == "Lateral") == (row[4] == "")
            with Image.open(base / row[0]) as im:
                assert im.mode == "L" and im.size == (48, 48)
        values = {v for r in rows for v in r[5:]}
        if split == "train":
            assert values == {"1.0", "0.0", "-1.0", ""}
            patients = [r[0].split("/")[2] for r in rows]
            assert len(set(patients)) < len(patients)
        else:
            assert values == {"1.0", "0.0"}


def test_mimic_layout(tiny_out):
    root = tiny_out / "mimic_cxr"
    lheader, labels = _read(root / "mimic-cxr-2.0.0-chexpert.csv")
    assert lheader == ["subject_id", "study_id", *MIMIC_LABELS]
    assert list(MIMIC_LABELS[:3]) == ["Atelectasis", "Cardiomegaly", "Consolidation"]
    mheader, meta = _read(root / "mimic-cxr-2.0.0-metadata.csv")
    assert mheader[:5] == [
        "dicom_id",
        "subject_id",
        "study_id",
        "PerformedProcedureStepDescription",
        "ViewPosition",
    ]
    sheader, split = _read(root / "mimic-cxr-2.0.0-split.csv")
    assert sheader == ["dicom_id", "study_id", "subject_id", "split"]
    assert len(meta) == len(split) == TINY["mimic_cxr"]
    studies = {(r[0], r[1]) for r in labels}
    assert len(studies) == len(labels)
    for m in meta:
        assert re.fullmatch(r"[0-9a-f]{8}(-[0-9a-f]{8}){4}", m[0])
        assert re.fullmatch(r"1\d{7}", m[1]) and re.fullmatch(r"5\d{7}", m[2])
        assert (m[1], m[2]) in studies and m[4] in ("PA", "AP", "LATERAL", "LL")
        assert re.fullmatch(r"2\d{3}(0[1-9]|1[0-2])\d{2}", m[7])
        path = root / "files" / f"p{m[1][:2]}" / f"p{m[1]}" / f"s{m[2]}" / f"{m[0]}.jpg"
        with Image.open(path) as im:
            assert im.mode == "L" and im.size == (int(m[6]), int(m[5]))
    assert {s[3] for s in split} <= {"train", "validate", "test"}
    by_subject = {}
    for s in split:
        by_subject.setdefault(s[2], set()).add(s[3])
    assert all(len(v) == 1 for v in by_subject.values())  # subject-level split
    assert any(m[4] in ("LATERAL", "LL") for m in meta)


def test_rerun_is_noop_and_conflict_needs_overwrite(tiny_out, tmp_path):
    before = {p: p.stat().st_mtime_ns for p in (tiny_out / "aptos2019").rglob("*")}
    write_all(tiny_out, size=TINY, seed=0)
    assert {p: p.stat().st_mtime_ns for p in (tiny_out / "aptos2019").rglob("*")} == before
    root = tmp_path / "isic2019"
    write_isic2019(root, size={**TINY, "isic2019": 16}, seed=0)
    with pytest.raises(DataError, match="overwrite"):
        write_isic2019(root, size={**TINY, "isic2019": 16}, seed=1)
    write_isic2019(root, size={**TINY, "isic2019": 16}, seed=1, overwrite=True)
    assert '"seed": 1' in (root / ".crsbench-synth.json").read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["isic2019"]  # no temp folders left


def test_failed_build_leaves_nothing(tmp_path, monkeypatch):
    import crsbench.datasets.synthetic.isic2019 as mod

    def boom(*args, **kwargs):
        raise RuntimeError("killed")

    monkeypatch.setattr(mod, "render_isic", boom)
    with pytest.raises(RuntimeError):
        mod.write_isic2019(tmp_path / "isic2019", size={**TINY, "isic2019": 16})
    assert list(tmp_path.iterdir()) == []


def test_size_validation():
    assert resolve_size("medium").side == 224
    assert resolve_size({"isic2019": 20}).isic2019 == 20
    with pytest.raises(ConfigError, match="Did you mean 'small'"):
        resolve_size("smal")
    with pytest.raises(ConfigError, match="isic2019"):
        resolve_size({"isic2018": 20})
    with pytest.raises(ConfigError, match="at least"):
        resolve_size({"side": 8})
