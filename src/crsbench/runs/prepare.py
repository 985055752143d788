"""Load every dataset of a config once, cap it, split it and draw the label subsamples."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from crsbench.config import BenchmarkConfig
from crsbench.core.seeding import stable_seed
from crsbench.store.details import ShiftDetails

if TYPE_CHECKING:
    from crsbench.datasets.base import Dataset
    from crsbench.runs.plan import CellPlan
    from crsbench.splits.core import Splits


@dataclass(frozen=True)
class PreparedDataset:
    """A loaded dataset with its fixed splits and the nested label subsamples.

    ``eval_rows`` are the rows it is evaluated on: the test split of a probe dataset; for a
    shift target (``splits`` is ``None``: no probe is ever trained on it) the rows its shift's
    ``rows`` key selects (:func:`crsbench.datasets.eval_rows.shift_eval_rows`), named by
    ``eval_rows_choice``, under the ``max_images`` cap.
    """

    dataset: Dataset
    splits: Splits
    subsets: dict[tuple[float, int], np.ndarray]
    eval_rows: np.ndarray
    eval_rows_choice: str | None = None

    def shift_provenance(self, scored: np.ndarray) -> dict[str, Any]:
        """A shift record's ``details["shift_rows"]``: the choice, images and patients scored.

        ``scored`` is a boolean mask over ``eval_rows`` (False: an image that did not decode).
        """
        from crsbench.datasets.eval_rows import rows_provenance

        rows = np.asarray(self.eval_rows)[np.asarray(scored, dtype=bool)]
        return rows_provenance(self.dataset, str(self.eval_rows_choice), rows)

    def shift_details(self, scored: np.ndarray) -> ShiftDetails:
        """What every shift record on this target carries in ``details``: ``shift_rows``
        (:meth:`shift_provenance`) and ``eval_dataset_revision``, the target's revision (its
        label file and image list), which decides "already done" like the probe dataset's
        ``dataset_revision`` (:mod:`crsbench.store.revisions`)."""
        return ShiftDetails(shift_rows=self.shift_provenance(scored),
                            eval_dataset_revision=self.dataset.revision)  # fmt: skip


def cap_rows(image_ids: np.ndarray, groups: np.ndarray, max_images: int | None) -> np.ndarray:
    """Rows kept under a ``max_images`` cap: whole groups, chosen by a stable hash of the group.

    Deterministic on any machine; keeping whole groups keeps the patient-level split valid.
    A ``max_images`` that is not an integer is a :class:`ConfigError` (a cohort YAML's value
    reaches here unchecked).
    """
    if max_images is not None and (isinstance(max_images, bool) or not isinstance(max_images, int)):
        from crsbench.core.errors import ConfigError

        raise ConfigError(f"max_images must be a whole number of images. Got {max_images!r}.")
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


def subset_dataset(ds: Dataset, rows: np.ndarray, cap: int | None) -> Dataset:
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


def refuse_missing_files(name: str, paths: np.ndarray) -> None:
    """Fail early when more images are missing than the bad-image budget allows; fewer are
    left to the extraction, which quarantines and names them."""
    from crsbench.datasets.bad_images import refuse_bad_images
    from crsbench.datasets.files import exists_mask

    paths = np.asarray(paths)
    missing = paths[~exists_mask(paths)]
    refuse_bad_images(name, [(str(p), "missing") for p in missing], len(paths))


def prepare_shift_target(ds: Dataset, rows: str, max_images: int | None) -> PreparedDataset:
    """A shift target: the rows ``rows`` selects, then capped (whole patients) to ``max_images``.

    The cap applies to the evaluation rows, so a capped target keeps its official test split
    instead of a sliver of it.
    """
    from crsbench.datasets.eval_rows import shift_eval_rows

    chosen = shift_eval_rows(ds, rows)
    kept = cap_rows(np.asarray(ds.image_ids)[chosen], np.asarray(ds.groups)[chosen], max_images)
    return PreparedDataset(ds, None, {}, chosen[kept], eval_rows_choice=rows)


def load_checked(cfg: BenchmarkConfig, name: str) -> tuple[Dataset, PreparedDataset | None]:
    """Load dataset ``name`` of ``cfg``, capped, with the run's missing-file check.

    Returns the dataset and, for a shift target, its prepared form (else None). Also the
    preflight's check of a dataset (:mod:`crsbench.runs.preflight`): what passes here, the run
    can load.
    """
    ds, target = _load_capped(cfg, name)
    if cfg.datasets[name].options.get("check_files", True):
        paths = np.asarray(ds.paths)
        refuse_missing_files(name, paths if target is None else paths[target.eval_rows])
    return ds, target


def _load_capped(cfg: BenchmarkConfig, name: str) -> tuple[Dataset, PreparedDataset | None]:
    """Dataset ``name`` of ``cfg`` as a run loads it (capped; files not checked)."""
    from crsbench.datasets import load

    spec = cfg.datasets[name]
    # Missing files follow the bad-image rule (quarantined up to the budget, see
    # crsbench.datasets.bad_images), so the adapter's all-or-nothing check is replaced.
    ds = load(name, spec.root, **{**dict(spec.options), "check_files": False})
    if name in cfg.shift_targets:
        # Nothing is ever trained on a shift target: only its evaluation rows matter.
        rows_of = {s.target: s.rows for s in cfg.shifts}
        return ds, prepare_shift_target(ds, rows_of[name], spec.max_images)
    rows = cap_rows(np.asarray(ds.image_ids), np.asarray(ds.groups), spec.max_images)
    if len(rows) < len(ds):
        ds = subset_dataset(ds, rows, spec.max_images)
    return ds, None


def current_revisions(cfg: BenchmarkConfig) -> tuple[dict[str, str], dict[str, str]]:
    """Each dataset's revision as a run of ``cfg`` would record it now, without checking files.

    Returns
    -------
    (dict, dict)
        Dataset name → revision (probe datasets after the ``max_images`` cap, shift targets
        as loaded: what :func:`prepare_datasets` gives), and dataset name → why it could not
        be loaded (for ``crsbench status``, which reports rather than fails).
    """
    from crsbench.core.errors import CrsbenchError

    revisions: dict[str, str] = {}
    problems: dict[str, str] = {}
    for name in cfg.datasets:
        try:
            ds, _ = _load_capped(cfg, name)
        except CrsbenchError as exc:
            problems[name] = str(exc)
            continue
        revisions[name] = ds.revision
    return revisions, problems


def prepare_datasets(cfg: BenchmarkConfig) -> dict[str, PreparedDataset]:
    """Load, cap, split and subsample every dataset of ``cfg`` (shift targets included)."""
    from crsbench.splits import label_subsamples, make_splits

    out: dict[str, PreparedDataset] = {}
    for name in cfg.datasets:
        ds, target = load_checked(cfg, name)
        if target is not None:
            out[name] = target
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


def shift_targets_for(
    plan: CellPlan, prepared: dict[str, PreparedDataset]
) -> dict[str, PreparedDataset]:
    """The prepared shift targets of a cell (``plan.shift_targets``), in plan order."""
    return {name: prepared[name] for name in plan.shift_targets}
