"""Tiny datasets written by the tests in the real on-disk formats (CSV + JPEG/PNG)."""

from __future__ import annotations

import gzip
import io
from collections.abc import Sequence
from pathlib import Path

import pytest
from PIL import Image

from crsbench.datasets.chexpert import CHEXPERT_LABELS

ISIC_COLUMNS = ("MEL", "NV", "BCC", "AK", "BKL", "DF", "VASC", "SCC", "UNK")


def _image_bytes(fmt: str) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (120, 60, 30)).save(buffer, format=fmt)
    return buffer.getvalue()


JPEG = _image_bytes("JPEG")
PNG = _image_bytes("PNG")


def write_csv(path: Path, header: Sequence[str], rows: Sequence[Sequence[object]]) -> Path:
    """Write a CSV the simple way (cells are already formatted strings or numbers)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [",".join(header)] + [",".join(str(c) for c in row) for row in rows]
    data = ("\n".join(lines) + "\n").encode()
    if path.suffix == ".gz":
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


def touch_image(path: Path, fmt: str = "jpeg") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(JPEG if fmt == "jpeg" else PNG)


class Writers:
    """Factories for each dataset layout; each returns the dataset root."""

    @staticmethod
    def isic(root: Path, classes: Sequence[str], metadata: bool = True) -> Path:
        rows = []
        for i, cls in enumerate(classes):
            image = f"ISIC_{i:07d}"
            rows.append([image, *("1.0" if c == cls else "0.0" for c in ISIC_COLUMNS)])
            touch_image(root / "ISIC_2019_Training_Input" / f"{image}.jpg")
        write_csv(root / "ISIC_2019_Training_GroundTruth.csv", ["image", *ISIC_COLUMNS], rows)
        if metadata:
            meta = [
                [f"ISIC_{i:07d}", 30 + 5 * i, "anterior torso", f"lesion_{i // 2}", "male"]
                for i in range(len(classes))
            ]
            header = ["image", "age_approx", "anatom_site_general", "lesion_id", "sex"]
            write_csv(root / "ISIC_2019_Training_Metadata.csv", header, meta)
        return root

    @staticmethod
    def aptos(root: Path, grades: Sequence[object]) -> Path:
        rows = [[f"{i:012x}", g] for i, g in enumerate(grades)]
        for i in range(len(grades)):
            touch_image(root / "train_images" / f"{i:012x}.png", "png")
        write_csv(root / "train.csv", ["id_code", "diagnosis"], rows)
        return root

    @staticmethod
    def chexpert(
        root: Path,
        train: Sequence[Sequence[str]],
        valid: Sequence[Sequence[str]] = (),
        folder: str = "CheXpert-v1.0-small",
        path_prefix: str | None = None,
        views: Sequence[str] | None = None,
        images: bool = True,
    ) -> Path:
        """``train``/``valid``: one row of 14 label cells per image (patient i, study1)."""
        prefix = folder if path_prefix is None else path_prefix
        header = ["Path", "Sex", "Age", "Frontal/Lateral", "AP/PA", *CHEXPERT_LABELS]
        k = 0
        for split, label_rows in (("train", train), ("valid", valid)):
            rows = []
            for cells in label_rows:
                view = views[k] if views is not None else "Frontal"
                name = "view1_frontal.jpg" if view == "Frontal" else "view2_lateral.jpg"
                rel = f"{split}/patient{k:05d}/study1/{name}"
                rows.append([f"{prefix}/{rel}", "Female", 40 + k, view, "AP", *cells])
                if images:
                    touch_image(root / folder / rel)
                k += 1
            write_csv(root / folder / f"{split}.csv", header, rows)
        return root

    @staticmethod
    def mimic(
        root: Path,
        studies: Sequence[tuple[int, int, Sequence[str]]],
        images: Sequence[tuple[str, int, int, str, str]],
        gz: bool = False,
        images_on_disk: bool = True,
    ) -> Path:
        """studies: (subject, study, 14 cells); images: (dicom, subject, study, view, split)."""
        ext = ".csv.gz" if gz else ".csv"
        label_rows = [[s, t, *cells] for s, t, cells in studies]
        write_csv(
            root / f"mimic-cxr-2.0.0-chexpert{ext}",
            ["subject_id", "study_id", *sorted(CHEXPERT_LABELS)],
            [[r[0], r[1], *[dict(zip(CHEXPERT_LABELS, r[2:], strict=True))[n]
                            for n in sorted(CHEXPERT_LABELS)]] for r in label_rows],
        )  # fmt: skip
        meta = [[d, s, t, "CHEST (PA AND LAT)", v, 2500, 2000] for d, s, t, v, _ in images]
        write_csv(
            root / f"mimic-cxr-2.0.0-metadata{ext}",
            ["dicom_id", "subject_id", "study_id", "PerformedProcedureStepDescription",
             "ViewPosition", "Rows", "Columns"],
            meta,
        )  # fmt: skip
        split = [[d, t, s, sp] for d, s, t, _, sp in images]
        write_csv(
            root / f"mimic-cxr-2.0.0-split{ext}",
            ["dicom_id", "study_id", "subject_id", "split"],
            split,
        )
        if images_on_disk:
            for d, s, t, _, _ in images:
                touch_image(root / "files" / f"p{str(s)[:2]}" / f"p{s}" / f"s{t}" / f"{d}.jpg")
        return root


@pytest.fixture
def writers() -> type[Writers]:
    return Writers


NIH_HEADER = (
    "Image Index", "Finding Labels", "Follow-up #", "Patient ID", "Patient Age",
    "Patient Gender", "View Position", "OriginalImage[Width", "Height]",
    "OriginalImagePixelSpacing[x", "y]",
)  # fmt: skip
PADCHEST_HEADER = (
    "ImageID", "ImageDir", "StudyDate_DICOM", "StudyID", "PatientID", "PatientBirth",
    "PatientSex_DICOM", "Projection", "Labels",
)  # fmt: skip
PADCHEST_CSV = "PADCHEST_chest_x_ray_images_labels_160K_01.02.19.csv"


def png16(path: Path, top: int = 4095) -> None:
    """A 16-bit grey PNG holding values 0..top."""
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.linspace(0, top, 64).reshape(8, 8).astype(np.uint16)).save(path)


def dicom(path: Path) -> None:
    """A small uncompressed MONOCHROME1 DICOM file (the synthetic writer's code)."""
    import numpy as np

    from crsbench.datasets.synthetic.dicom_write import save_dicom

    look = {"bits": 12, "monochrome1": True, "window": True, "gain": 1.0}
    save_dicom(path, np.linspace(0, 1, 64).reshape(8, 8), path.name, look, "F", 40, "PA")


class ShiftWriters:
    """Tiny copies of the NIH, PadChest and VinDr layouts (real file names and columns)."""

    @staticmethod
    def nih(root: Path, rows: Sequence[tuple[str, str, int, str]], lists: bool = True) -> Path:
        """rows: (image index, finding labels, patient id, view); images alternate folders."""
        table = [[i, f, 0, p, "045Y" if k == 0 else 45, "M", v, 8, 8, 0.14, 0.14]
                 for k, (i, f, p, v) in enumerate(rows)]  # fmt: skip
        write_csv(root / "Data_Entry_2017_v2020.csv", NIH_HEADER, table)
        for k, (image, *_rest) in enumerate(rows):
            touch_image(root / f"images_{k % 2 + 1:03d}" / "images" / image, "png")
        if lists:
            test = [r[0] for r in rows if int(r[2]) % 2 == 0]
            (root / "test_list.txt").write_text("".join(f"{t}\n" for t in test))
            train = [r[0] for r in rows if r[0] not in test]
            (root / "train_val_list.txt").write_text("".join(f"{t}\n" for t in train))
        return root

    @staticmethod
    def padchest(root: Path, rows: Sequence[tuple[str, str, str, str]]) -> Path:
        """rows: (ImageID, PatientID, Projection, Labels cell); images in folder 0."""
        table = [[i, "0", "20150612", "s1", p, "1950", "F", proj, f'"{labels}"']
                 for i, p, proj, labels in rows]  # fmt: skip
        write_csv(root / PADCHEST_CSV, PADCHEST_HEADER, table)
        for image, *_rest in rows:
            png16(root / "0" / image)
        return root

    @staticmethod
    def vindr_official(
        root: Path, train: Sequence[Sequence[object]], test: Sequence[Sequence[object]],
        findings: Sequence[str],
    ) -> Path:  # fmt: skip
        """train rows: (image_id, rad_id, 0/1 per finding); test rows: (image_id, 0/1 ...)."""
        write_csv(
            root / "annotations/image_labels_train.csv", ["image_id", "rad_id", *findings], train
        )
        write_csv(root / "annotations/image_labels_test.csv", ["image_id", *findings], test)
        for split, rows in (("train", train), ("test", test)):
            for image in {r[0] for r in rows}:
                dicom(root / split / f"{image}.dicom")
        return root

    @staticmethod
    def vindr_kaggle(root: Path, rows: Sequence[tuple[str, str, str]]) -> Path:
        """rows: (image_id, class_name, rad_id)."""
        header = [
            "image_id",
            "class_name",
            "class_id",
            "rad_id",
            "x_min",
            "y_min",
            "x_max",
            "y_max",
        ]
        table = [[i, c, 0, r, 1, 1, 5, 5] for i, c, r in rows]
        write_csv(root / "train.csv", header, table)
        for image in {r[0] for r in rows}:
            dicom(root / "train" / f"{image}.dicom")
        return root


@pytest.fixture
def shift() -> type[ShiftWriters]:
    return ShiftWriters
