"""Synthetic APTOS 2019 in the Kaggle layout: ``train.csv`` and ``train_images/<id_code>.png``."""

from __future__ import annotations

from pathlib import Path

from crsbench.core.seeding import stable_rng
from crsbench.datasets.synthetic import sampling
from crsbench.datasets.synthetic.aptos_render import render_aptos
from crsbench.datasets.synthetic.io import dataset_writer, save_png, write_csv
from crsbench.datasets.synthetic.sizes import SynthSize

NAME = "aptos2019"
LABELS = "train.csv"
IMAGE_DIR = "train_images"
COLUMNS = ("id_code", "diagnosis")
# Grade counts of the real training set (3,662 images), grades 0..4.
REAL_COUNTS = (1805, 370, 999, 193, 295)


def _build(tmp: Path, sz: SynthSize, seed: int, progress: sampling.Progress) -> None:
    """Write every file of the dataset under ``tmp`` (see :func:`~crsbench.datasets.synthetic.io.write_dataset`)."""
    h, w = sz.side, int(round(sz.side * 4 / 3))
    rng = stable_rng(NAME, seed, "table")
    counts = sampling.class_counts(sz.aptos2019, REAL_COUNTS, class_floor=sz.class_floor)
    grades = sampling.shuffled_labels(rng, counts)
    ids = sampling.unique_hex(rng, sz.aptos2019, 6)
    for index, (id_code, grade) in enumerate(zip(ids, grades, strict=True)):
        image = render_aptos(int(grade), stable_rng(NAME, seed, index), h, w)
        save_png(tmp / IMAGE_DIR / f"{id_code}.png", image)
        sampling.tick(progress)
    rows = sorted((id_code, int(g)) for id_code, g in zip(ids, grades, strict=True))
    write_csv(tmp / LABELS, COLUMNS, rows)


write_aptos2019 = dataset_writer(
    NAME, _build, "Write a synthetic APTOS 2019 training set under ``root``."
)
