"""The golden run's config, every key spelled out, and its tiny data (shared with
``benchmarks/golden_kernels.py``, which reruns it under other numeric kernels)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def pinned_config(data: Path, out: Path) -> dict[str, Any]:
    """Every config key spelled out (a later change of a default does not move the golden)."""
    dataset = {"options": {}, "max_images": None}
    return {
        "version": 1,
        "encoders": [
            {"name": "pixel", "weights_path": None, "input_size": None, "allow_remote_code": False}
        ],
        "datasets": {
            "isic2019": {"root": str(data / "isic2019"), **dataset},
            "chexpert": {"root": str(data / "chexpert"), **dataset},
            "mimic_cxr": {"root": str(data / "mimic_cxr"), **dataset},
        },
        "shifts": [{"source": "chexpert", "target": "mimic_cxr", "rows": "official_test"}],
        "exclude_cells": [],
        "seeds": [0, 1],
        "fractions": [0.01, 0.05, 0.1, 0.25, 1.0],
        "perturbations": {
            "names": ["gaussian_blur", "jpeg", "contrast", "rician", "fov_crop"],
            "severities": [1, 2, 3],
            "include_extra": False,
            "working_size": 224,
        },
        "probes": {
            "logistic": {
                "c_grid": [0.01, 1.0, 100.0],
                "max_iter": 100,
                # the rule the goldens were written under (the default became
                # "probabilities" on 2026-12-02; these rows test the pipeline, not the rule)
                "stop": "gradient",
                "tol": 0.0001,
            },
            "mlp": {"hidden_size": 8, "epochs": 5, "lr": 0.001, "weight_decay": 0.0001},
            "knn": {"k": 5, "metric": "cosine"},
        },
        "recalibrators": ["temperature", "isotonic"],
        "layers": [0.5, 1.0],
        "anchors": "v1",
        "regimes": {
            "frozen": True,
            "lora": {
                "enabled": False,
                "rank": 8,
                "alpha": 16.0,
                "dropout": 0.1,
                "epochs": 8,
                "lr": 0.0001,
                "lr_factors": [1.0, 3.0, 10.0],
                "seeds": [0, 1, 2],
                "fractions": None,
                "encoders": None,
            },
        },
        "output_dir": str(out),
        "cache_dir": None,
        "split_seed": 0,
        "batch_size": 64,
        "num_workers": 0,
        "device": "cpu",
        "precision": "fp32",
        "precision_check": {"min_cosine": None, "max_auroc_delta": None, "n_images": None},
    }
