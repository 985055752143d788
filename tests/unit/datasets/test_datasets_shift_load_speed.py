"""The real shift-target label files load at full size (generated files, no images).

How long they take is measured by ``benchmarks/timings.py``, which reuses these writers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from crsbench.datasets import load

N_NIH, N_PADCHEST, N_VINDR_KAGGLE = 112_120, 160_861, 67_914
NIH_NAMES = ["Effusion", "Mass", "Nodule", "Infiltration", "Atelectasis", "Hernia", "Edema"]
PC_NAMES = [
    "pleural effusion",
    "cardiomegaly",
    "NSG tube",
    "aortic elongation",
    "nodule",
    "scoliosis",
]
VINDR = ["Cardiomegaly", "Aortic enlargement", "Pleural effusion", "Nodule/Mass", "No finding"]


def _combos(rng, names, n, sep):
    picks = rng.integers(0, 2, size=(n, len(names))).astype(bool)
    return [sep.join(np.array(names)[row]) for row in picks]


def _nih(root: Path, rng) -> None:
    findings = [c or "No Finding" for c in _combos(rng, NIH_NAMES, N_NIH, "|")]
    pd.DataFrame({
        "Image Index": [f"{i // 4:08d}_{i % 4:03d}.png" for i in range(N_NIH)],
        "Finding Labels": findings, "Follow-up #": 0,
        "Patient ID": np.arange(N_NIH) // 4, "Patient Age": rng.integers(1, 95, N_NIH),
        "Patient Gender": rng.choice(["M", "F"], N_NIH), "View Position": rng.choice(["PA", "AP"], N_NIH),
    }).to_csv(root / "Data_Entry_2017_v2020.csv", index=False)  # fmt: skip


def _padchest(root: Path, rng) -> None:
    lists = [
        repr(c.split("|") if c else ["normal"]) for c in _combos(rng, PC_NAMES, N_PADCHEST, "|")
    ]
    pd.DataFrame({
        "ImageID": [f"{i:020d}_00-000-000.png" for i in range(N_PADCHEST)],
        "ImageDir": np.arange(N_PADCHEST) // 3000, "StudyDate_DICOM": "20150101",
        "PatientID": np.arange(N_PADCHEST) // 2, "PatientBirth": rng.integers(1920, 2010, N_PADCHEST),
        "PatientSex_DICOM": rng.choice(["M", "F"], N_PADCHEST),
        "Projection": rng.choice(["PA", "L", "AP_horizontal"], N_PADCHEST), "Labels": lists,
    }).to_csv(root / "PADCHEST_chest_x_ray_images_labels_160K_01.02.19.csv", index=False)  # fmt: skip


def _vindr(root: Path, rng) -> None:
    image = rng.integers(0, 15_000, N_VINDR_KAGGLE)
    image[:15_000] = np.arange(15_000)
    pd.DataFrame({
        "image_id": [f"{i:032x}" for i in image], "class_name": rng.choice(VINDR, N_VINDR_KAGGLE),
        "class_id": 0, "rad_id": rng.choice(["R8", "R9", "R10"], N_VINDR_KAGGLE),
        "x_min": 1.0, "y_min": 1.0, "x_max": 9.0, "y_max": 9.0,
    }).to_csv(root / "train.csv", index=False)  # fmt: skip


@pytest.mark.slow  # ~15 s together on a loaded 2-core machine (generation included)
@pytest.mark.parametrize(
    ("name", "writer", "expected"),
    [("nih_cxr14", _nih, N_NIH), ("padchest", _padchest, None), ("vindr_cxr", _vindr, 15_000)],
)
def test_full_size_label_file_loads(tmp_path, name, writer, expected):
    """Full-size label files load with the expected rows (their time: benchmarks/timings.py)."""
    writer(tmp_path, np.random.default_rng(0))
    data = load(name, tmp_path, check_files=False)
    if expected is not None:
        assert len(data) == expected
    assert len(data) > 0
