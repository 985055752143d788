"""A small synthetic cohort in a plain folder + CSV, as a hospital team would have one.

Tiny grayscale PNGs whose brightness and texture depend on the class, so a probe on the
offline encoders (``pixel``, ``random_cnn``) learns something; patients hold one to three
images each, all with the patient's label.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

#: Classes of the multi-class cohort.
CLASSES: tuple[str, ...] = ("benign", "malignant", "unclear")


def write_cohort(
    root: Path,
    n_patients: int = 90,
    *,
    multilabel: bool = False,
    size: int = 24,
    seed: int = 0,
    classes: tuple[str, ...] = CLASSES,
    images_per_patient: int = 3,
    jitter: float = 0.0,
) -> tuple[Path, Path]:
    """Write ``root/images/*.png`` and ``root/cohort.csv``; return (csv, images folder).

    Columns: ``path`` (relative to the images folder), ``patient``, ``age`` (kept as
    metadata), and ``diagnosis`` (multi-class, ``classes``) or ``effusion``, ``nodule``
    (multi-label 0/1). ``jitter`` > 0 adds a per-image brightness offset with that standard
    deviation, so the classes overlap and the probes' AUROC stays below 1.
    """
    from PIL import Image

    rng = np.random.default_rng(seed)
    images = root / "images"
    images.mkdir(parents=True, exist_ok=True)
    header = "path,patient,age," + ("effusion,nodule" if multilabel else "diagnosis")
    lines = [header]
    yy, xx = np.mgrid[:size, :size]
    for p in range(n_patients):
        if multilabel:
            label = (int(p % 2 == 0), int(p % 3 == 0))
            level = 60 + 90 * label[0]
            stripes = label[1]
        else:
            k = p % len(classes)
            level, stripes = 50 + 70 * k, int(k == 2)
        for i in range(1 + (p // len(classes)) % images_per_patient):
            noise = rng.normal(0, 25, (size, size))
            if jitter > 0:
                noise = noise + rng.normal(0, jitter)
            pattern = 40 * np.sin(xx * 1.3) * stripes + 0.5 * yy
            pixels = np.clip(level + pattern + noise, 0, 255).astype(np.uint8)
            name = f"p{p:04d}_{i}.png"
            Image.fromarray(pixels).save(images / name)
            cells = f"{label[0]},{label[1]}" if multilabel else classes[k]
            lines.append(f"{name},P{p:04d},{40 + p % 37},{cells}")
    csv = root / "cohort.csv"
    csv.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return csv, images
