"""A tiny, fast benchmark config over synthetic data, shared by the runner's integration tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

TINY_SIZES = {
    "isic2019": 60,
    "aptos2019": 50,
    "chexpert_train": 90,
    "chexpert_valid": 12,
    "mimic_cxr": 50,
    "nih_cxr14": 60,
    "padchest": 40,
    "vindr_cxr": 24,
    "side": 48,
    # the real class shares and chest findings: the runner's tests predate the demo's mix
    "class_floor": 0,
    "common_findings": False,
}
#: The shift targets beside MIMIC-CXR (written only by the tests that use them).
MORE_SHIFT_TARGETS: tuple[str, ...] = ("nih_cxr14", "padchest", "vindr_cxr")


def write_tiny_data(root: Path, more_targets: tuple[str, ...] = ()) -> Path:
    """Synthetic ISIC, APTOS, CheXpert and MIMIC (and ``more_targets``, e.g.
    :data:`MORE_SHIFT_TARGETS`) in their real layouts, tiny."""
    from crsbench.datasets.synthetic import write_all

    names = ("isic2019", "aptos2019", "chexpert", "mimic_cxr", *more_targets)
    write_all(root, size=TINY_SIZES, seed=0, names=names)
    return root


def tiny_config_dict(
    data: Path, out: Path, encoders: tuple[str, ...] = ("pixel",)
) -> dict[str, Any]:
    """A reduced grid: every kind of record, few of each."""
    return {
        "encoders": list(encoders),
        "datasets": {
            "isic2019": {"root": str(data / "isic2019")},
            "chexpert": {"root": str(data / "chexpert")},
            "mimic_cxr": {"root": str(data / "mimic_cxr")},
        },
        "shifts": [{"source": "chexpert", "target": "mimic_cxr"}],
        "seeds": [0, 1],
        # every fraction and paper condition (a cell missing one has no L or R, hence no CRS);
        # few seeds, layers, C values and iterations keep it fast
        "fractions": [0.01, 0.05, 0.10, 0.25, 1.0],
        "layers": [0.5, 1.0],
        "perturbations": {"include_extra": False},
        "recalibrators": ["temperature", "isotonic"],
        "probes": {
            "logistic": {"c_grid": [0.01, 1.0, 100.0], "max_iter": 100, "tol": 1e-4},
            "mlp": {"hidden_size": 8, "epochs": 5},
        },
        "output_dir": str(out),
        "device": "cpu",
        "num_workers": 0,
    }
