"""Synthetic CheXpert-v1.0-small: ``train.csv``, ``valid.csv`` and the patient/study tree."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from crsbench.core.seeding import stable_rng
from crsbench.datasets.synthetic import sampling
from crsbench.datasets.synthetic.cxr_labels import (
    CHEXPERT_COMMON,
    CHEXPERT_LABELS,
    CHEXPERT_PROFILE,
    LabelProfile,
    draw_findings,
    report,
)
from crsbench.datasets.synthetic.cxr_render import CHEXPERT_SCANNER, render_cxr
from crsbench.datasets.synthetic.io import dataset_writer, save_jpeg, write_csv
from crsbench.datasets.synthetic.sizes import SynthSize

NAME = "chexpert"
PREFIX = "CheXpert-v1.0-small"
COLUMNS = ("Path", "Sex", "Age", "Frontal/Lateral", "AP/PA", *CHEXPERT_LABELS)
LATERAL_FRACTION = 1.0 / 6.0


@dataclass(frozen=True)
class _Mix:
    """Findings, mean extra studies per patient and AP share of the frontal views."""

    profile: LabelProfile
    extra_studies: float
    ap_share: float


REAL_MIX = _Mix(CHEXPERT_PROFILE, 2.3, 0.8)
#: ``SynthSize.common_findings``: common findings, mostly one study per patient (so the test
#: patients fill subgroups of 30), 60 % AP.
COMMON_MIX = _Mix(CHEXPERT_COMMON, 0.25, 0.6)


def _rows(n_rows: int, split: str, first_patient: int, seed: int, mix: _Mix) -> list[dict]:
    """Image rows of one split: patients with several studies, some with a lateral view."""
    rng = stable_rng(NAME, seed, split, "table")
    n_lateral = int(round(n_rows * LATERAL_FRACTION)) if n_rows >= 3 else 0
    n_studies = n_rows - n_lateral
    with_lateral = set(rng.choice(n_studies, size=n_lateral, replace=False).tolist())
    rows: list[dict] = []
    study_index, patient = 0, first_patient
    while study_index < n_studies:
        n_here = min(n_studies - study_index, 1 + int(rng.poisson(mix.extra_studies)))
        sex = str(rng.choice(["Male", "Female"], p=[0.59, 0.41]))
        age = int(np.clip(rng.normal(61, 17), 18, 90))
        frailty = float(rng.standard_normal())
        for study in range(1, n_here + 1):
            ap = bool(rng.uniform() < mix.ap_share)
            findings = draw_findings(rng, mix.profile, frailty, ap)
            cells = report(rng, findings, mix.profile, exact=(split == "valid"))
            base = f"{PREFIX}/{split}/patient{patient:05d}/study{study}"
            common_fields = {"Sex": sex, "Age": age, "findings": findings, "cells": cells}
            rows.append(
                {
                    "Path": f"{base}/view1_frontal.jpg",
                    "view": "AP" if ap else "PA",
                    "Frontal/Lateral": "Frontal",
                    "AP/PA": "AP" if ap else "PA",
                    **common_fields,
                }
            )
            if study_index in with_lateral:
                rows.append(
                    {
                        "Path": f"{base}/view2_lateral.jpg",
                        "view": "LATERAL",
                        "Frontal/Lateral": "Lateral",
                        "AP/PA": "",
                        **common_fields,
                    }
                )
            study_index += 1
            age = min(90, age + int(rng.integers(0, 2)))
        patient += 1
    return rows


def _build(tmp: Path, sz: SynthSize, seed: int, progress: sampling.Progress) -> None:
    """Write every file of the dataset under ``tmp`` (see :func:`~crsbench.datasets.synthetic.io.write_dataset`)."""
    mix = COMMON_MIX if sz.common_findings else REAL_MIX
    train = _rows(sz.chexpert_train, "train", 1, seed, mix)
    last = max(int(r["Path"].split("/patient")[1][:5]) for r in train)
    valid = _rows(sz.chexpert_valid, "valid", last + 1, seed, mix)
    for split, rows in (("train", train), ("valid", valid)):
        for index, row in enumerate(rows):
            image = render_cxr(
                row["findings"],
                stable_rng(NAME, seed, split, index),
                sz.side,
                row["view"],
                CHEXPERT_SCANNER,
            )
            save_jpeg(tmp / row["Path"], image, quality=90)
            sampling.tick(progress)
        table = [
            [
                r["Path"],
                r["Sex"],
                r["Age"],
                r["Frontal/Lateral"],
                r["AP/PA"],
                *(r["cells"][k] for k in CHEXPERT_LABELS),
            ]
            for r in rows
        ]
        write_csv(tmp / PREFIX / f"{split}.csv", COLUMNS, table)


write_chexpert = dataset_writer(
    NAME,
    _build,
    "Write a synthetic CheXpert-v1.0-small under ``root`` (``root/CheXpert-v1.0-small/...``).",
)
