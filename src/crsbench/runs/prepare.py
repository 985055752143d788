"""Load every dataset of a config once, cap it, split it and draw the label subsamples."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from crsbench.config import BenchmarkConfig
from crsbench.core.seeding import stable_seed


@dataclass(frozen=True)
class PreparedDataset:
    """A loaded dataset with its fixed splits and the nested label subsamples.

    ``eval_rows`` are the rows a shift target is evaluated on: all of them, since no probe is
    ever trained on a shift target (its ``splits`` is ``None``).
    """

    dataset: Any
    splits: Any
    subsets: dict[tuple[float, int], np.ndarray]
    eval_rows: np.ndarray


def cap_rows(image_ids: np.ndarray, groups: np.ndarray, max_images: int | None) -> np.ndarray:
    """Rows kept under a ``max_images`` cap: whole groups, chosen by a stable hash of the group.

    Deterministic on any machine; keeping whole groups keeps the patient-level split valid.
    """
    n = len(image_ids)
    if max_images is None or max_images >= n:
        return np.arange(n)
    uniq, inverse = np.unique(np.asarray(groups).astype(str), return_inverse=True)
    order = np.argsort([stable_seed("cap", g) for g in uniq], kind="stable")
    sizes = np.bincount(inverse, minlength=len(uniq))[order]
    n_groups = int(np.searchsorted(np.cumsum(sizes), max_images, side="right"))
    chosen = np.zeros(len(uniq), dtype=bool)
    chosen[order[: max(1, n_groups)]] = True
    return np.flatnonzero(chosen[inverse])


def subset_dataset(ds: Any, rows: np.ndarray, cap: int | None) -> Any:
    """The same dataset restricted to ``rows``; its revision records the cap."""
    import dataclasses
    import hashlib

    rev = hashlib.sha256(f"{ds.revision}|max_images={cap}|n={len(rows)}".encode()).hexdigest()
    return dataclasses.replace(
        ds,
        image_ids=ds.image_ids[rows],
        paths=ds.paths[rows],
        labels=ds.labels[rows],
        groups=ds.groups[rows],
        metadata=ds.metadata.iloc[rows].reset_index(drop=True),
        revision=rev,
        notes=(*ds.notes, f"capped to {len(rows)} images (max_images={cap}) by whole groups"),
    )


def refuse_missing_files(name: str, ds: Any) -> None:
    """Fail early when more images are missing than the bad-image budget allows; fewer are
    left to the extraction, which quarantines and names them."""
    from crsbench.datasets.bad_images import refuse_bad_images
    from crsbench.datasets.files import exists_mask

    paths = np.asarray(ds.paths)
    missing = paths[~exists_mask(paths)]
    refuse_bad_images(name, [(str(p), "missing") for p in missing], len(paths))


def prepare_datasets(cfg: BenchmarkConfig) -> dict[str, PreparedDataset]:
    """Load, cap, split and subsample every dataset of ``cfg`` (shift targets included)."""
    from crsbench.datasets import load
    from crsbench.splits import label_subsamples, make_splits

    out: dict[str, PreparedDataset] = {}
    for name, spec in cfg.datasets.items():
        # Missing files follow the bad-image rule (quarantined up to the budget, see
        # crsbench.datasets.bad_images), so the adapter's all-or-nothing check is replaced.
        ds = load(name, spec.root, **{**dict(spec.options), "check_files": False})
        rows = cap_rows(np.asarray(ds.image_ids), np.asarray(ds.groups), spec.max_images)
        if len(rows) < len(ds):
            ds = subset_dataset(ds, rows, spec.max_images)
        if spec.options.get("check_files", True):
            refuse_missing_files(name, ds)
        if name in cfg.shift_targets:
            # Nothing is ever trained on a shift target: every row is an evaluation row.
            out[name] = PreparedDataset(ds, None, {}, np.arange(len(ds)))
            continue
        splits = make_splits(ds, seed=cfg.split_seed)
        subsets = label_subsamples(
            ds.labels[splits.train],
            ds.task,
            fractions=cfg.fractions,
            seeds=cfg.seeds,
            key=f"{name}|{cfg.split_seed}",
        )
        out[name] = PreparedDataset(ds, splits, subsets, np.asarray(splits.test))
    return out
