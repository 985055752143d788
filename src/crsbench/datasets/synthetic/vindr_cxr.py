"""Synthetic VinDr-CXR as DICOM, in the official PhysioNet layout (default) or the Kaggle one
(the fifth hospital: harsh contrast, 12/14-bit detectors, some MONOCHROME1, three readers)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from crsbench.core.errors import ConfigError
from crsbench.core.seeding import stable_rng
from crsbench.datasets.synthetic import sampling
from crsbench.datasets.synthetic.cxr_labels import draw_findings
from crsbench.datasets.synthetic.cxr_render import render_cxr
from crsbench.datasets.synthetic.dicom_write import require_pydicom, save_dicom
from crsbench.datasets.synthetic.io import write_csv, write_dataset
from crsbench.datasets.synthetic.shift_profiles import (
    VINDR_EXTRA,
    VINDR_NAMES,
    VINDR_PROFILE,
    VINDR_SCANNER,
    finding_names,
)
from crsbench.datasets.synthetic.sizes import SynthSize
from crsbench.datasets.vindr_cxr import KAGGLE_CLASSES, KAGGLE_COLUMNS

NAME = "vindr_cxr"
LAYOUTS = ("official", "kaggle")
OFFICIAL_FINDINGS = (
    "Aortic enlargement", "Atelectasis", "Calcification", "Cardiomegaly", "Clavicle fracture",
    "Consolidation", "Edema", "Emphysema", "Enlarged PA", "ILD", "Infiltration", "Lung Opacity",
    "Lung cavity", "Lung cyst", "Mediastinal shift", "Nodule/Mass", "Pleural effusion",
    "Pleural thickening", "Pneumothorax", "Pulmonary fibrosis", "Rib fracture", "Other lesion",
    "COPD", "Lung tumor", "Pneumonia", "Tuberculosis", "Other diseases", "No finding",
)  # fmt: skip
TEST_FRACTION = 0.2
READERS = 3


def _readers(rng: np.random.Generator, names: list[str]) -> list[tuple[str, list[str]]]:
    """Three radiologists: each marks a true finding with p 0.8 and rarely adds one."""
    out = []
    for rad in rng.choice(17, size=READERS, replace=False):
        marked = [n for n in names if rng.uniform() < 0.8]
        if rng.uniform() < 0.05:
            marked.append(str(rng.choice(VINDR_EXTRA)))
        out.append((f"R{int(rad) + 1}", sorted(set(marked))))
    return out


def _plan(n_images: int, seed: int, layout: str) -> list[dict]:
    rng = stable_rng(NAME, seed, "table")
    ids = sampling.unique_hex(rng, n_images, 16)
    rows = []
    for k in range(n_images):
        findings = draw_findings(rng, VINDR_PROFILE, float(rng.standard_normal()), False)
        names = finding_names(rng, findings, VINDR_NAMES, VINDR_EXTRA)
        if layout == "kaggle":
            names = [n for n in names if n in KAGGLE_CLASSES]
        test = layout == "official" and rng.uniform() < TEST_FRACTION
        look = {"bits": int(rng.choice([12, 14])), "monochrome1": bool(rng.uniform() < 0.3),
                "window": bool(rng.uniform() < 0.5), "gain": float(rng.uniform(0.6, 1.0))}  # fmt: skip
        rows.append({"id": ids[k], "split": "test" if test else "train", "findings": findings,
                     "names": names, "readers": _readers(rng, names), "look": look,
                     "sex": str(rng.choice(["M", "F"])), "age": int(rng.integers(18, 90))})  # fmt: skip
    return rows


def _official_tables(tmp: Path, rows: list[dict]) -> None:
    def cells(marked: list[str]) -> list[int]:
        flags = [int(f in marked) for f in OFFICIAL_FINDINGS[:-1]]
        return [*flags, int(not any(flags))]

    train = [
        [r["id"], rad, *cells(m)] for r in rows if r["split"] == "train" for rad, m in r["readers"]
    ]
    test = [[r["id"], *cells(r["names"])] for r in rows if r["split"] == "test"]
    test_columns = [*OFFICIAL_FINDINGS[:-2], "Other disease", "No finding"]
    write_csv(
        tmp / "annotations" / "image_labels_train.csv",
        ("image_id", "rad_id", *OFFICIAL_FINDINGS),
        train,
    )
    write_csv(tmp / "annotations" / "image_labels_test.csv", ("image_id", *test_columns), test)


def _kaggle_table(tmp: Path, rows: list[dict], side: int, seed: int) -> None:
    rng = stable_rng(NAME, seed, "boxes")
    out = []
    for r in rows:
        for rad, marked in r["readers"]:
            if not marked:
                out.append([r["id"], "No finding", 14, rad, "", "", "", ""])
            for name in marked:
                x, y = sorted(rng.integers(0, side, 2)), sorted(rng.integers(0, side, 2))
                out.append([r["id"], name, KAGGLE_CLASSES.index(name), rad, x[0], y[0], x[1], y[1]])
    write_csv(tmp / "train.csv", KAGGLE_COLUMNS, out)


def _build_layout(layout: str):
    def build(tmp: Path, sz: SynthSize, seed: int, progress: sampling.Progress) -> None:
        rows = _plan(sz.vindr_cxr, seed, layout)
        for index, row in enumerate(rows):
            pixels = render_cxr(
                row["findings"], stable_rng(NAME, seed, index), sz.side, "PA", VINDR_SCANNER
            )
            path = tmp / row["split"] / f"{row['id']}.dicom"
            save_dicom(
                path, pixels, f"{seed}-{row['id']}", row["look"], row["sex"], row["age"], "PA"
            )
            sampling.tick(progress)
        if layout == "official":
            _official_tables(tmp, rows)
        else:
            _kaggle_table(tmp, rows, sz.side, seed)

    return build


def write_vindr_cxr(
    root: str | Path,
    size: str | dict | SynthSize = "small",
    seed: int = 0,
    overwrite: bool = False,
    progress: sampling.Progress = None,
    layout: str = "official",
) -> Path:
    """Write a synthetic VinDr-CXR under ``root`` in ``layout`` (``official`` or ``kaggle``).

    Other parameters and the return value: see
    :func:`~crsbench.datasets.synthetic.io.write_dataset`. Needs pydicom.
    """
    if layout not in LAYOUTS:
        raise ConfigError(f"layout must be one of {LAYOUTS}. Got {layout!r} instead.")
    require_pydicom()
    name = NAME if layout == "official" else f"{NAME}-kaggle"
    return write_dataset(name, _build_layout(layout), root, size, seed, overwrite, progress)
