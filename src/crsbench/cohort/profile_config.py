"""The benchmark config of a cohort profile, with each default chosen for the cohort's size.

The profile is the benchmark's pipeline (:func:`crsbench.runs.pipeline.run_benchmark`) on one
``folder`` dataset. What it keeps from the protocol, always: the five label fractions and the
fifteen paper conditions, since a cell missing any of them has no L or R and so no CRS
(docs/protocol.md, section 7); the fixed anchors; the four recalibrators. What it scales with
the cohort: the number of seeds. What it leaves out (they are not part of the four axes): the
layer sweep, the control probes and the extra noises.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from crsbench import protocol
from crsbench.cohort.spec import CohortSpec
from crsbench.config import BenchmarkConfig, parse_config

#: The dataset key of a cohort in its config and store (the adapter's name).
COHORT_DATASET = "folder"
#: Cohorts below this many images get :data:`SMALL_SEEDS` seeds, larger ones the protocol's 5.
SMALL_COHORT = 5000
SMALL_SEEDS: tuple[int, ...] = (0, 1, 2)


def folder_options(spec: CohortSpec) -> dict[str, Any]:
    """The ``folder`` adapter's options for ``spec`` (paths in the CSV resolve on the images)."""
    options: dict[str, Any] = {
        "csv": str(Path(spec.data).expanduser().resolve()),
        "image_dir": ".",
        "path_column": spec.path_column,
        "label_columns": ",".join(spec.label_columns),
        "missing": spec.missing,
    }
    if spec.group_column:
        options["group_column"] = spec.group_column
    if spec.id_column:
        options["id_column"] = spec.id_column
    if spec.classes:
        options["classes"] = ",".join(spec.classes)
    return options


def default_encoders() -> list[str]:
    """The paper's encoder panel (``crsbench/resources/configs/paper.yaml``)."""
    from crsbench.config import load_packaged_config

    return [e.name for e in load_packaged_config("paper").encoders]


def choose_seeds(spec: CohortSpec, n_images: int) -> tuple[tuple[int, ...], str]:
    """Seeds of the profile and the reason, in words."""
    if spec.seeds is not None:
        return tuple(spec.seeds), f"seeds {list(spec.seeds)}: as given"
    if n_images < SMALL_COHORT:
        return SMALL_SEEDS, (
            f"seeds {list(SMALL_SEEDS)}: the cohort has {n_images} images (< {SMALL_COHORT}); "
            "3 seeds instead of the protocol's 5 keep its intervals usable at a fraction of "
            "the probe and recalibration fits"
        )
    return protocol.SEEDS, f"seeds {list(protocol.SEEDS)}: the protocol's 5"


def cohort_config(spec: CohortSpec, n_images: int) -> tuple[BenchmarkConfig, list[str]]:
    """The benchmark config of ``spec`` and one sentence per choice made for the cohort.

    Parameters
    ----------
    spec : CohortSpec
    n_images : int
        Images of the cohort (after ``max_images``), which sizes the defaults.
    """
    seeds, seed_reason = choose_seeds(spec, n_images)
    encoders = list(spec.encoders) if spec.encoders else default_encoders()
    data = {
        "version": 1,
        "encoders": encoders,
        "datasets": {
            COHORT_DATASET: {
                "root": str(Path(spec.images).expanduser().resolve()),
                "options": folder_options(spec),
                "max_images": spec.max_images,
            }
        },
        "seeds": list(seeds),
        "fractions": list(protocol.LABEL_FRACTIONS),
        "perturbations": {
            "names": list(protocol.PAPER_PERTURBATIONS),
            "severities": list(protocol.SEVERITIES),
            "include_extra": False,
        },  # fmt: skip
        "probes": {"mlp": None, "knn": None},
        "layers": [1.0],
        "output_dir": str(spec.out),
        "device": spec.device,
        "image_bounds": spec.image_bounds.as_dict(),
        "batch_size": spec.batch_size,
        "num_workers": spec.num_workers,
    }
    cfg = parse_config(data, base_dir=Path.cwd(), source="crsbench profile")
    reasons = [
        seed_reason,
        "label fractions 1, 5, 10, 25, 100 %: the protocol's five (fewer would leave L, and "
        "so the CRS, undefined); each subsample keeps at least one positive per class",
        "the 15 paper conditions (5 perturbations x 3 severities) on the test split; extra "
        "noises, the layer sweep and the control probes are left out (not part of the axes)",
        "recalibrators temperature, vector, isotonic, dirichlet on the calibration split",
        f"encoders: {', '.join(encoders)}"
        + ("" if spec.encoders else " (the paper's panel; --encoders picks others)"),
    ]
    return cfg, reasons
