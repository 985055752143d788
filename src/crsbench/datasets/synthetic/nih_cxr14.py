"""Synthetic NIH ChestX-ray14: ``Data_Entry_2017_v2020.csv``, the official split lists and
8-bit PNGs in ``images_001/images/`` … (the third hospital: frontal only, soft, low noise)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from crsbench.core.seeding import stable_rng
from crsbench.datasets.synthetic import sampling
from crsbench.datasets.synthetic.cxr_labels import LabelProfile, draw_findings
from crsbench.datasets.synthetic.cxr_render import render_cxr
from crsbench.datasets.synthetic.io import dataset_writer, save_png, write_csv
from crsbench.datasets.synthetic.shift_profiles import (
    NIH_COMMON,
    NIH_EXTRA,
    NIH_NAMES,
    NIH_PROFILE,
    NIH_SCANNER,
    finding_names,
)
from crsbench.datasets.synthetic.sizes import SynthSize

NAME = "nih_cxr14"
LABELS_CSV = "Data_Entry_2017_v2020.csv"
COLUMNS = (
    "Image Index", "Finding Labels", "Follow-up #", "Patient ID", "Patient Age",
    "Patient Gender", "View Position", "OriginalImage[Width", "Height]",
    "OriginalImagePixelSpacing[x", "y]",
)  # fmt: skip
PER_FOLDER = 60
TEST_FRACTION = 0.25


def _plan(n_images: int, seed: int, profile: LabelProfile = NIH_PROFILE) -> list[dict]:
    """Image rows: patients with follow-ups, 60 % PA, split by patient."""
    rng = stable_rng(NAME, seed, "table")
    rows: list[dict] = []
    patient = 0
    while len(rows) < n_images:
        patient += 1
        sex = str(rng.choice(["M", "F"], p=[0.56, 0.44]))
        age = int(np.clip(rng.normal(47, 17), 2, 95))
        frailty = float(rng.standard_normal())
        split = "test" if rng.uniform() < TEST_FRACTION else "train"
        for follow_up in range(min(n_images - len(rows), 1 + int(rng.poisson(1.5)))):
            ap = bool(rng.uniform() < 0.4)
            findings = draw_findings(rng, profile, frailty, ap)
            names = sorted(finding_names(rng, findings, NIH_NAMES, NIH_EXTRA))
            rows.append({
                "id": f"{patient:08d}_{follow_up:03d}.png", "follow_up": follow_up,
                "patient": patient, "age": age, "sex": sex, "view": "AP" if ap else "PA",
                "findings": findings, "labels": "|".join(names) or "No Finding", "split": split,
            })  # fmt: skip
    return rows


def image_path(index: int, image_id: str) -> str:
    """``images_001/images/<id>`` with :data:`PER_FOLDER` images per folder, in row order."""
    return f"images_{index // PER_FOLDER + 1:03d}/images/{image_id}"


def _build(tmp: Path, sz: SynthSize, seed: int, progress: sampling.Progress) -> None:
    rows = _plan(sz.nih_cxr14, seed, NIH_COMMON if sz.common_findings else NIH_PROFILE)
    for index, row in enumerate(rows):
        pixels = render_cxr(
            row["findings"], stable_rng(NAME, seed, index), sz.side, row["view"], NIH_SCANNER
        )
        save_png(tmp / image_path(index, row["id"]), pixels)
        sampling.tick(progress)
    write_csv(
        tmp / LABELS_CSV,
        COLUMNS,
        [[r["id"], r["labels"], r["follow_up"], r["patient"], r["age"], r["sex"], r["view"],
          sz.side, sz.side, 0.143, 0.143] for r in rows],
    )  # fmt: skip
    for split, name in (("train", "train_val_list.txt"), ("test", "test_list.txt")):
        listed = [r["id"] for r in rows if r["split"] == split]
        (tmp / name).write_text("".join(f"{i}\n" for i in listed), encoding="utf-8")


write_nih_cxr14 = dataset_writer(NAME, _build, "Write a synthetic NIH ChestX-ray14 under ``root``.")
