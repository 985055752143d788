"""Helpers of the results-store tests: record and frame factories (imported by the tests)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd

from crsbench.store import METRIC_COLUMNS, RUN_COLUMNS, RunRecord

HASH = "ab" * 32
OTHER_HASH = "cd" * 32


def make_record(**changes: Any) -> RunRecord:
    """A valid record; keyword arguments override fields (a metric's name: its value)."""
    base: dict[str, Any] = {
        "encoder": "pixel",
        "dataset": "isic2019",
        "eval_dataset": "isic2019",
        "seed": 0,
        "config_hash": HASH,
        "package_version": "0.1.0",
        "encoder_revision": "sha256:enc",
        "dataset_revision": "sha256:data",
        "anchors_version": "v1",
        "wall_time_s": 0.25,
        "details": {"chosen_C": 1.0},
    }
    metrics = dict(changes.pop("metrics", {"auroc": 0.8, "ece": 0.05, "brier": 0.1, "nll": 0.4}))
    metrics.update({k: changes.pop(k) for k in list(changes) if k in METRIC_COLUMNS})
    base.update(changes)
    return RunRecord(**base, metrics=metrics)


def make_frame(n: int, seed: int = 0, config_hash: str = HASH) -> pd.DataFrame:
    """``n`` valid, distinct run rows built column-wise (fast for large ``n``)."""
    rng = np.random.default_rng(seed)
    i = np.arange(n)
    conds = np.array(["clean", "gaussian_blur", "jpeg", "contrast"])
    cond = conds[i % 4]
    sev = np.where(cond == "clean", 0, 1 + (i // 4) % 3)
    frame = pd.DataFrame(
        {
            "encoder": np.char.add("enc", (i % 15).astype(str)),
            "dataset": np.array(["isic2019", "aptos2019", "chexpert"])[(i // 15) % 3],
            "eval_dataset": "same",
            "seed": (i // 45) % 5,
            "regime": "frozen",
            "probe": "logistic",
            "layer": 1.0,
            "fraction": 1.0,
            "condition": cond,
            "severity": sev,
            "recalibrator": np.char.add("r", (i // 225).astype(str)),
            "auroc": rng.uniform(0.5, 1.0, n),
            "ece": rng.uniform(0.0, 0.3, n),
            "brier": rng.uniform(0.0, 0.3, n),
            "nll": rng.uniform(0.1, 1.0, n),
            "sens_at_spec90": np.where(i % 7 == 0, np.nan, rng.uniform(0, 1, n)),
            "sens_at_spec95": np.nan,
            "config_hash": config_hash,
            "package_version": "0.1.0",
            "encoder_revision": "e1",
            "dataset_revision": "d1",
            "anchors_version": "v1",
            "wall_time_s": rng.uniform(0, 2, n),
            "created_at": datetime(2026, 1, 1),
            "schema_version": 1,
            "details": "{}",
        }
    )
    frame["eval_dataset"] = frame["dataset"]
    return frame[[c for c in RUN_COLUMNS if c != "run_key"]]
