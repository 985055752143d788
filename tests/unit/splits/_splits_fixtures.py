"""Synthetic dataset-like objects for the split tests (duck-typed, no crsbench.datasets)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd


def make_dataset(
    n_groups: int = 400,
    n_labels: int = 5,
    task: str = "multilabel",
    name: str = "toy",
    seed: int = 0,
    official: dict[str, float] | None = None,
) -> SimpleNamespace:
    """Groups of 1-5 rows; multilabel with varied prevalence, or multiclass one-hot."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 6, n_groups)
    group_names = np.array([f"patient{i:05d}" for i in range(n_groups)])
    groups = np.repeat(group_names, sizes)
    n = len(groups)
    if task == "multilabel":
        prevalence = np.linspace(0.03, 0.5, n_labels)
        labels = (rng.random((n, n_labels)) < prevalence).astype(float)
        labels[rng.random((n, n_labels)) < 0.1] = np.nan
    else:
        p = np.linspace(1.0, 8.0, n_labels)
        labels = np.eye(n_labels)[rng.choice(n_labels, n, p=p / p.sum())]
    metadata = pd.DataFrame({"row": np.arange(n)})
    if official:
        names = list(official)
        group_official = rng.choice(names, n_groups, p=list(official.values()))
        metadata["official_split"] = np.repeat(group_official, sizes)
    return SimpleNamespace(
        name=name,
        image_ids=np.array([f"img{i:06d}" for i in range(n)]),
        labels=labels,
        groups=groups,
        task=task,
        metadata=metadata,
    )
