"""Synthetic PadChest: the 160K label CSV's columns and 16-bit PNGs in ``<ImageDir>/`` folders
(the fourth hospital: 12-bit detector values in 16-bit PNGs, varying exposure, laterals)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from crsbench.core.seeding import stable_rng
from crsbench.datasets.synthetic import sampling
from crsbench.datasets.synthetic.cxr_labels import draw_findings
from crsbench.datasets.synthetic.cxr_render import render_cxr
from crsbench.datasets.synthetic.io import PNG_COMPRESS_LEVEL, dataset_writer, write_csv
from crsbench.datasets.synthetic.shift_profiles import (
    PADCHEST_EXTRA,
    PADCHEST_NAMES,
    PADCHEST_PROFILE,
    PADCHEST_SCANNER,
    finding_names,
)
from crsbench.datasets.synthetic.sizes import SynthSize

NAME = "padchest"
LABELS_CSV = "PADCHEST_chest_x_ray_images_labels_160K_01.02.19.csv"
COLUMNS = (
    "ImageID", "ImageDir", "StudyDate_DICOM", "StudyID", "PatientID", "PatientBirth",
    "PatientSex_DICOM", "ViewPosition_DICOM", "Projection", "MethodProjection", "Pediatric",
    "Modality_DICOM", "Manufacturer_DICOM", "PhotometricInterpretation_DICOM",
    "PixelRepresentation_DICOM", "PixelAspectRatio_DICOM", "SpatialResolution_DICOM",
    "BitsStored_DICOM", "WindowCenter_DICOM", "WindowWidth_DICOM", "Rows_DICOM",
    "Columns_DICOM", "XRayTubeCurrent_DICOM", "Exposure_DICOM", "ExposureInuAs_DICOM",
    "ExposureTime", "RelativeXRayExposure_DICOM", "ReportID", "Report", "MethodLabel", "Labels",
    "Localizations", "LabelsLocalizationsBySentence", "labelCUIS", "LocalizationsCUIS",
)  # fmt: skip
PROJECTIONS = (("PA", 0.55), ("L", 0.25), ("AP_horizontal", 0.12), ("AP", 0.08))
PER_FOLDER = 50
MAX_VALUE = 4095  # 12 bits stored in 16-bit PNGs


def _row(rng: np.random.Generator, index: int, patient: str, birth: int, sex: str,
         frailty: float) -> dict:  # fmt: skip
    projection = str(rng.choice([p for p, _ in PROJECTIONS], p=[w for _, w in PROJECTIONS]))
    ap = projection.startswith("AP")
    findings = draw_findings(rng, PADCHEST_PROFILE, frailty, ap)
    names = finding_names(rng, findings, PADCHEST_NAMES, PADCHEST_EXTRA) or ["normal"]
    year = int(rng.integers(2009, 2018))
    study = f"{int(rng.integers(10**15, 10**16))}"
    image_id = f"2168401113669640{study}_{int(rng.integers(0, 100)):02d}-{index:03d}-{int(rng.integers(0, 1000)):03d}.png"
    return {
        "ImageID": image_id, "ImageDir": str(index // PER_FOLDER), "year": year,
        "StudyDate_DICOM": f"{year}{int(rng.integers(1, 13)):02d}{int(rng.integers(1, 29)):02d}",
        "StudyID": study, "PatientID": patient, "PatientBirth": str(birth),
        "PatientSex_DICOM": sex, "Projection": projection, "findings": findings,
        "Labels": repr(names), "view": "LATERAL" if projection == "L" else ("AP" if ap else "PA"),
        "gain": float(rng.uniform(0.55, 1.0)),
    }  # fmt: skip


def _plan(n_images: int, seed: int) -> list[dict]:
    rng = stable_rng(NAME, seed, "table")
    rows: list[dict] = []
    while len(rows) < n_images:
        patient = sampling.unique_hex(rng, 1, 16)[0]
        birth = int(rng.integers(1925, 2000))
        sex, frailty = str(rng.choice(["M", "F"])), float(rng.standard_normal())
        for _ in range(min(n_images - len(rows), 1 + int(rng.poisson(0.8)))):
            rows.append(_row(rng, len(rows), patient, birth, sex, frailty))
    if len(rows) > 3:
        rows[3]["Labels"] = ""  # a release row without labels (dropped and counted on load)
    return rows


def save_png16(path: Path, image: np.ndarray, gain: float) -> None:
    """Save a float image in [0, 1] as a 16-bit grey PNG holding 12-bit values x ``gain``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    values = np.rint(np.clip(image, 0.0, 1.0) * MAX_VALUE * gain).astype(np.uint16)
    Image.fromarray(values).save(path, format="PNG", compress_level=PNG_COMPRESS_LEVEL)


def _cells(r: dict, side: int) -> list[object]:
    view = {"PA": "POSTEROANTERIOR", "L": "LATERAL"}.get(r["Projection"], "ANTEROPOSTERIOR")
    return [
        r["ImageID"], r["ImageDir"], r["StudyDate_DICOM"], r["StudyID"], r["PatientID"],
        r["PatientBirth"], r["PatientSex_DICOM"], view, r["Projection"], "Manual review of DICOM fields",
        "No", "CR", "PhilipsMedicalSystems", "MONOCHROME2", 0, "", 0.139, 12, 2047, 4095, side,
        side, 250, 4, 4000, 16, 1800, r["StudyID"], "synthetic report", "Physician",
        r["Labels"], "[]", "[]", "[]", "[]",
    ]  # fmt: skip


def _build(tmp: Path, sz: SynthSize, seed: int, progress: sampling.Progress) -> None:
    rows = _plan(sz.padchest, seed)
    for index, row in enumerate(rows):
        pixels = render_cxr(
            row["findings"], stable_rng(NAME, seed, index), sz.side, row["view"], PADCHEST_SCANNER
        )
        save_png16(tmp / row["ImageDir"] / row["ImageID"], pixels, row["gain"])
        sampling.tick(progress)
    write_csv(tmp / LABELS_CSV, COLUMNS, [_cells(r, sz.side) for r in rows])


write_padchest = dataset_writer(NAME, _build, "Write a synthetic PadChest under ``root``.")
