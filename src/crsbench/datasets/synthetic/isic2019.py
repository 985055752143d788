"""Synthetic ISIC 2019 in the official training layout.

Files: ``ISIC_2019_Training_GroundTruth.csv``, ``ISIC_2019_Training_Metadata.csv`` and
``ISIC_2019_Training_Input/ISIC_XXXXXXX.jpg``.
"""

from __future__ import annotations

from pathlib import Path

from crsbench.core.seeding import stable_rng
from crsbench.datasets.synthetic import sampling
from crsbench.datasets.synthetic.io import dataset_writer, save_jpeg, write_csv
from crsbench.datasets.synthetic.isic_render import CLASSES, lesion_params, render_isic
from crsbench.datasets.synthetic.sizes import SynthSize

NAME = "isic2019"
GROUND_TRUTH = "ISIC_2019_Training_GroundTruth.csv"
METADATA = "ISIC_2019_Training_Metadata.csv"
IMAGE_DIR = "ISIC_2019_Training_Input"
GT_COLUMNS = ("image", *CLASSES, "UNK")
META_COLUMNS = ("image", "age_approx", "anatom_site_general", "lesion_id", "sex")
# Class counts of the real training set (25,331 images): MEL NV BCC AK BKL DF VASC SCC.
REAL_COUNTS = (4522, 12875, 3323, 867, 2624, 239, 253, 628)
SITES = (
    "anterior torso",
    "upper extremity",
    "posterior torso",
    "lower extremity",
    "lateral torso",
    "head/neck",
    "palms/soles",
    "oral/genital",
)
_SITE_P = (0.24, 0.16, 0.20, 0.24, 0.02, 0.10, 0.03, 0.01)


def _plan(n: int, seed: int, class_floor: int = 0) -> list[dict]:
    """Rows of the ground truth and metadata (one dict per image, sorted by image name)."""
    rng = stable_rng(NAME, seed, "table")
    counts = sampling.class_counts(n, REAL_COUNTS, class_floor=class_floor)
    labels = sampling.shuffled_labels(rng, counts)
    numbers = rng.permutation(sampling.unique_ints(rng, n, 0, 73_255))
    rows: list[dict] = []
    lesion_counter = {"HAM": 0, "BCN": 0}
    lesion_numbers = {k: rng.permutation(10_000)[: n + 1] for k in lesion_counter}
    i = 0
    for cls in range(len(CLASSES)):
        members = [j for j in range(n) if labels[j] == cls]
        pos = 0
        while pos < len(members):
            source = rng.choice(["HAM", "BCN", "MSK"], p=[0.45, 0.45, 0.10])
            group = 1 if source == "MSK" else int(rng.choice([1, 2, 3], p=[0.6, 0.3, 0.1]))
            chunk = members[pos : pos + group]
            pos += group
            if source == "MSK":
                lesion_id = ""
            else:
                number = lesion_numbers[source][lesion_counter[source]]
                lesion_counter[source] += 1
                lesion_id = f"{source}_{number:07d}"
            age = "" if rng.uniform() < 0.02 else f"{float(5 * rng.integers(3, 18)):.1f}"
            sex = "" if rng.uniform() < 0.02 else str(rng.choice(["male", "female"]))
            site = "" if rng.uniform() < 0.05 else str(rng.choice(SITES, p=_SITE_P))
            lesion_key = f"lesion{i}"
            i += 1
            for j in chunk:
                rows.append(
                    {
                        "index": j,
                        "image": f"ISIC_{numbers[j]:07d}",
                        "label": CLASSES[cls],
                        "age": age,
                        "sex": sex,
                        "site": site,
                        "lesion_id": lesion_id,
                        "lesion_key": lesion_key,
                    }
                )
    rows.sort(key=lambda r: r["image"])
    return rows


def _build(tmp: Path, sz: SynthSize, seed: int, progress: sampling.Progress) -> None:
    """Write every file of the dataset under ``tmp`` (see :func:`~crsbench.datasets.synthetic.io.write_dataset`)."""
    h, w = sz.side, int(round(sz.side * 4 / 3))
    rows = _plan(sz.isic2019, seed, sz.class_floor)
    params: dict[str, dict] = {}
    for row in rows:
        if row["lesion_key"] not in params:
            lrng = stable_rng(NAME, seed, row["lesion_key"])
            params[row["lesion_key"]] = lesion_params(row["label"], lrng)
        image = render_isic(
            row["label"], params[row["lesion_key"]], stable_rng(NAME, seed, row["index"]), h, w
        )
        save_jpeg(tmp / IMAGE_DIR / f"{row['image']}.jpg", image, quality=92)
        sampling.tick(progress)
    gt = [
        [r["image"], *("1.0" if c == r["label"] else "0.0" for c in CLASSES), "0.0"] for r in rows
    ]
    write_csv(tmp / GROUND_TRUTH, GT_COLUMNS, gt)
    meta = [[r["image"], r["age"], r["site"], r["lesion_id"], r["sex"]] for r in rows]
    write_csv(tmp / METADATA, META_COLUMNS, meta)


write_isic2019 = dataset_writer(
    NAME, _build, "Write a synthetic ISIC 2019 training set under ``root``."
)


def n_items(size: SynthSize) -> int:
    """Number of images :func:`write_isic2019` writes for ``size``."""
    return size.isic2019


__all__ = ["GT_COLUMNS", "META_COLUMNS", "write_isic2019", "n_items"]
