"""Synthetic MIMIC-CXR-JPG: label, metadata and split CSVs and ``files/pXX/pSUBJECT/sSTUDY``."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from crsbench.core.seeding import stable_rng
from crsbench.datasets.synthetic import sampling
from crsbench.datasets.synthetic.cxr_labels import (
    MIMIC_COMMON,
    MIMIC_LABELS,
    MIMIC_PROFILE,
    LabelProfile,
    draw_findings,
    report,
)
from crsbench.datasets.synthetic.cxr_render import MIMIC_SCANNER, render_cxr
from crsbench.datasets.synthetic.io import dataset_writer, save_jpeg, write_csv
from crsbench.datasets.synthetic.sizes import SynthSize

NAME = "mimic_cxr"
LABELS_CSV = "mimic-cxr-2.0.0-chexpert.csv"
METADATA_CSV = "mimic-cxr-2.0.0-metadata.csv"
SPLIT_CSV = "mimic-cxr-2.0.0-split.csv"
LABEL_COLUMNS = ("subject_id", "study_id", *MIMIC_LABELS)
METADATA_COLUMNS = (
    "dicom_id",
    "subject_id",
    "study_id",
    "PerformedProcedureStepDescription",
    "ViewPosition",
    "Rows",
    "Columns",
    "StudyDate",
    "StudyTime",
    "ProcedureCodeSequence_CodeMeaning",
    "ViewCodeSequence_CodeMeaning",
    "PatientOrientationCodeSequence_CodeMeaning",
)
SPLIT_COLUMNS = ("dicom_id", "study_id", "subject_id", "split")
LATERAL_FRACTION = 0.2
#: Share of patients in each official split. The real test split is ~2 % of MIMIC-CXR, yet
#: several thousand images; MIMIC-CXR is only a shift target here, evaluated on its official
#: test split by default, so half the synthetic patients are test patients: the small demo
#: size (400 images) scores the shift on ~150 frontal test images.
SPLIT_SHARES = {"train": 0.4, "validate": 0.1, "test": 0.5}
_VIEW_MEANING = {
    "PA": "postero-anterior",
    "AP": "antero-posterior",
    "LATERAL": "lateral",
    "LL": "left lateral",
}


def _plan(
    n_images: int, seed: int, profile: LabelProfile = MIMIC_PROFILE
) -> tuple[list[dict], list[dict]]:
    """Studies (one label row each) and images (one metadata/split row each)."""
    rng = stable_rng(NAME, seed, "table")
    n_lateral = int(round(n_images * LATERAL_FRACTION)) if n_images >= 3 else 0
    n_studies = n_images - n_lateral
    with_lateral = set(rng.choice(n_studies, size=n_lateral, replace=False).tolist())
    subjects = rng.permutation(sampling.unique_ints(rng, n_studies, 10_000_000, 20_000_000))
    study_ids = rng.permutation(sampling.unique_ints(rng, n_studies, 50_000_000, 60_000_000))
    dicoms = sampling.unique_hex(rng, n_images, 20)
    studies, images = [], []
    s, k = 0, 0
    for subject in subjects:
        if s >= n_studies:
            break
        split = str(rng.choice(list(SPLIT_SHARES), p=list(SPLIT_SHARES.values())))
        frailty = float(rng.standard_normal())
        date = dt.date(2100, 1, 1) + dt.timedelta(days=int(rng.integers(0, 36_500)))
        for _ in range(min(n_studies - s, 1 + int(rng.poisson(2.0)))):
            ap = bool(rng.uniform() < 0.55)
            findings = draw_findings(rng, profile, frailty, ap)
            cells = report(rng, findings, profile, exact=False)
            study = {"subject_id": int(subject), "study_id": int(study_ids[s]), "cells": cells}
            studies.append(study)
            procedure = "CHEST (PORTABLE AP)" if ap else "CHEST (PA AND LAT)"
            date += dt.timedelta(days=int(rng.integers(1, 40)))
            time = (
                f"{int(rng.integers(0, 24))}{int(rng.integers(0, 60)):02d}"
                f"{int(rng.integers(0, 60)):02d}.{int(rng.integers(0, 1000)):03d}"
            )
            views = ["AP" if ap else "PA"]
            if s in with_lateral:
                views.append(str(rng.choice(["LATERAL", "LL"], p=[0.8, 0.2])))
            for view in views:
                images.append(
                    {
                        **study,
                        "dicom_id": "-".join(dicoms[k][i : i + 8] for i in range(0, 40, 8)),
                        "view": view,
                        "findings": findings,
                        "split": split,
                        "procedure": procedure,
                        "date": date.strftime("%Y%m%d"),
                        "time": time.lstrip("0") or "0",
                    }
                )
                k += 1
            s += 1
    studies.sort(key=lambda r: (r["subject_id"], r["study_id"]))
    images.sort(key=lambda r: (r["subject_id"], r["study_id"], r["dicom_id"]))
    return studies, images


def image_path(image: dict) -> str:
    """Relative path of an image: ``files/p10/p10000032/s50414267/<dicom_id>.jpg``."""
    subject = str(image["subject_id"])
    return f"files/p{subject[:2]}/p{subject}/s{image['study_id']}/{image['dicom_id']}.jpg"


def _build(tmp: Path, sz: SynthSize, seed: int, progress: sampling.Progress) -> None:
    """Write every file of the dataset under ``tmp`` (see :func:`~crsbench.datasets.synthetic.io.write_dataset`)."""
    profile = MIMIC_COMMON if sz.common_findings else MIMIC_PROFILE
    studies, images = _plan(sz.mimic_cxr, seed, profile)
    for index, image in enumerate(images):
        view = "LATERAL" if image["view"] in ("LATERAL", "LL") else image["view"]
        pixels = render_cxr(
            image["findings"], stable_rng(NAME, seed, index), sz.side, view, MIMIC_SCANNER
        )
        save_jpeg(tmp / image_path(image), pixels, quality=85)
        sampling.tick(progress)
    write_csv(
        tmp / LABELS_CSV,
        LABEL_COLUMNS,
        [[s["subject_id"], s["study_id"], *(s["cells"][k] for k in MIMIC_LABELS)] for s in studies],
    )
    meta = []
    for im in images:
        orientation = "Recumbent" if im["view"] == "AP" else "Erect"
        meta.append(
            [
                im["dicom_id"],
                im["subject_id"],
                im["study_id"],
                im["procedure"],
                im["view"],
                sz.side,
                sz.side,
                im["date"],
                im["time"],
                im["procedure"],
                _VIEW_MEANING[im["view"]],
                orientation,
            ]
        )
    write_csv(tmp / METADATA_CSV, METADATA_COLUMNS, meta)
    write_csv(
        tmp / SPLIT_CSV,
        SPLIT_COLUMNS,
        [[im["dicom_id"], im["study_id"], im["subject_id"], im["split"]] for im in images],
    )


write_mimic_cxr = dataset_writer(
    NAME, _build, "Write a synthetic MIMIC-CXR-JPG (the second hospital) under ``root``."
)


__all__ = ["image_path", "write_mimic_cxr"]
