"""Golden check: the real pipeline on a pinned config writes the same ``runs`` rows as before.

The config pins every key (no default can move it); the rows' identity columns must match the
committed golden CSV exactly and their metrics to a relative 1e-12 (NaN equal to NaN). A
refactor that changes a number fails here. Regenerate the golden only for a change that is
meant to move numbers, and say so in its commit::

    python benchmarks/compare_stores.py OUT_DIR --write-csv tests/integration/golden/runs_pinned.csv
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from crsbench.config import parse_config
from crsbench.runs.pipeline import RunOptions, run_benchmark

from .runner_fixtures import write_tiny_data

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "golden" / "runs_pinned.csv"


def _compare_module() -> Any:
    spec = importlib.util.spec_from_file_location(
        "compare_stores", ROOT / "benchmarks" / "compare_stores.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
            "logistic": {"c_grid": [0.01, 1.0, 100.0], "max_iter": 100, "tol": 0.0001},
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


@pytest.fixture(scope="module")
def pinned_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("golden")
    data = write_tiny_data(root / "data")
    cfg = parse_config(pinned_config(data, root / "out"), base_dir=root)
    run_benchmark(cfg, RunOptions(progress=False))
    return root / "out"


def test_runs_rows_match_the_golden(pinned_store: Path) -> None:
    compare = _compare_module()
    got, want = compare.load_runs(pinned_store), compare.load_runs(GOLDEN)
    assert len(want) == 262  # the pinned grid (worked out in test_runner_end_to_end)
    lines = compare.differences(want, got)
    assert not lines, "\n".join(lines[:20])


def test_comparison_catches_a_moved_metric_and_a_missing_row(pinned_store: Path) -> None:
    compare = _compare_module()
    want = compare.load_runs(GOLDEN)
    moved = want.copy()
    moved.loc[3, "auroc"] = moved.loc[3, "auroc"] * (1 + 1e-9)
    assert len(compare.differences(want, moved)) == 1
    assert len(compare.differences(want, want.drop(index=5))) == 1
    assert compare.differences(want, want.copy()) == []
