"""Fixed, grouped, stratified train / val / calib / test splits of a dataset."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from crsbench.core.errors import ConfigError, DataError
from crsbench.core.seeding import stable_rng
from crsbench.splits.assign import assign_groups, check_group_disjoint, group_table, hash_group
from crsbench.splits.policy import (
    POOL,
    SPLIT_NAMES,
    SplitFractions,
    SplitPolicy,
    resolve_policy,
)


def _readonly(array: np.ndarray) -> np.ndarray:
    array = np.array(array, copy=True)
    array.setflags(write=False)
    return array


def splits_digest(image_ids: np.ndarray, assignment: np.ndarray) -> str:
    """sha256 over the sorted image ids of each split, in split order.

    Independent of the dataset's row order: the same rows in the same splits give the same
    digest whatever order the adapter listed them in.
    """
    h = hashlib.sha256()
    ids = np.asarray(image_ids).astype(str)
    assignment = np.asarray(assignment).astype(str)
    for name in SPLIT_NAMES:
        h.update(f"[{name}]\n".encode())
        for image_id in np.sort(ids[assignment == name]).tolist():
            h.update(image_id.encode("utf-8") + b"\n")
    return h.hexdigest()


@dataclass(frozen=True, eq=False)
class Splits:
    """The split artifact: one split name per row and sorted index arrays per split.

    Attributes
    ----------
    dataset : str
        Dataset name.
    seed : int
        Split seed.
    policy : str
        Name of the :class:`SplitPolicy` used.
    image_ids, groups, assignment : ndarray of str, shape (n,)
        Row-aligned with the dataset. ``assignment`` holds ``train``/``val``/``calib``/``test``.
    train, val, calib, test : ndarray of int64
        Sorted row indices of each split.
    digest : str
        :func:`splits_digest` of the assignment (a content hash of the artifact).
    """

    dataset: str
    seed: int
    policy: str
    image_ids: np.ndarray
    groups: np.ndarray
    assignment: np.ndarray
    train: np.ndarray
    val: np.ndarray
    calib: np.ndarray
    test: np.ndarray
    digest: str

    @classmethod
    def from_assignment(
        cls,
        dataset: str,
        seed: int,
        policy: str,
        image_ids: np.ndarray,
        groups: np.ndarray,
        assignment: np.ndarray,
    ) -> Splits:
        """Build (and check) a :class:`Splits` from a per-row assignment.

        Raises
        ------
        DataError
            Unknown split names, misaligned arrays, or a group in two splits.
        """
        image_ids = np.asarray(image_ids).astype(str)
        groups = np.asarray(groups).astype(str)
        assignment = np.asarray(assignment).astype(str)
        if not len(image_ids) == len(groups) == len(assignment):
            raise DataError(
                f"splits of {dataset!r}: image_ids, groups and assignment must have the same "
                f"length. Got {len(image_ids)}, {len(groups)}, {len(assignment)} instead."
            )
        bad = ~np.isin(assignment, SPLIT_NAMES)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise DataError(
                f"splits of {dataset!r}: row {row + 1} split must be one of {SPLIT_NAMES}. "
                f"Got {assignment[row]!r} instead."
            )
        check_group_disjoint(groups, assignment, what=f"splits of {dataset!r}")
        index = {
            name: _readonly(np.flatnonzero(assignment == name).astype(np.int64))
            for name in SPLIT_NAMES
        }
        return cls(
            dataset=str(dataset),
            seed=int(seed),
            policy=str(policy),
            image_ids=_readonly(image_ids),
            groups=_readonly(groups),
            assignment=_readonly(assignment),
            digest=splits_digest(image_ids, assignment),
            **index,
        )

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, dataset: str, seed: int, policy: str) -> Splits:
        """Rebuild from :meth:`to_frame` output (columns ``image_id``, ``group``, ``split``)."""
        missing = [c for c in ("image_id", "group", "split") if c not in frame.columns]
        if missing:
            raise DataError(
                f"splits frame must have columns image_id, group, split. Missing {missing}; "
                f"got {list(frame.columns)} instead."
            )
        return cls.from_assignment(
            dataset,
            seed,
            policy,
            frame["image_id"].to_numpy(),
            frame["group"].to_numpy(),
            frame["split"].to_numpy(),
        )

    def indices(self, name: str) -> np.ndarray:
        """Sorted row indices of split ``name``."""
        if name not in SPLIT_NAMES:
            raise ConfigError(f"split name must be one of {SPLIT_NAMES}. Got {name!r} instead.")
        return getattr(self, name)

    def sizes(self) -> dict[str, int]:
        """Number of rows per split."""
        return {name: len(getattr(self, name)) for name in SPLIT_NAMES}

    def to_frame(self) -> pd.DataFrame:
        """One row per image: ``image_id``, ``group``, ``split`` (dataset row order)."""
        return pd.DataFrame(
            {"image_id": self.image_ids, "group": self.groups, "split": self.assignment}
        )

    def __len__(self) -> int:
        return len(self.assignment)

    def __repr__(self) -> str:
        sizes = ", ".join(f"{k}={v}" for k, v in self.sizes().items())
        return (
            f"Splits(dataset={self.dataset!r}, seed={self.seed}, policy={self.policy!r}, "
            f"{sizes}, digest={self.digest[:12]})"
        )


def _dataset_arrays(dataset: Any) -> tuple[str, np.ndarray, np.ndarray, np.ndarray, Any]:
    for attr in ("name", "image_ids", "labels", "groups"):
        if not hasattr(dataset, attr):
            raise ConfigError(
                f"make_splits: dataset must have attribute {attr!r} (name, image_ids, labels, "
                f"groups, metadata). Got {type(dataset).__name__} without it."
            )
    name = str(dataset.name)
    ids = np.asarray(dataset.image_ids).astype(str)
    labels = np.asarray(dataset.labels, dtype=np.float64)
    groups = np.asarray(dataset.groups)
    n = len(ids)
    if n == 0:
        raise DataError(f"dataset {name!r}: must have at least one row. Got 0 rows.")
    if labels.ndim != 2 or labels.shape[0] != n:
        raise DataError(
            f"dataset {name!r}: labels must have shape (n_rows={n}, n_labels). "
            f"Got {labels.shape} instead."
        )
    if groups.shape != (n,):
        raise DataError(
            f"dataset {name!r}: groups must have shape ({n},). Got {groups.shape} instead."
        )
    group_str = groups.astype(str)
    missing = np.array([g is None for g in groups.tolist()]) | np.isin(group_str, ("", "nan"))
    if missing.any():
        row = int(np.flatnonzero(missing)[0])
        raise DataError(
            f"dataset {name!r}: row {row + 1} group must be a non-empty id. Got "
            f"{groups[row]!r} instead ({int(missing.sum())} rows alike)."
        )
    uniq, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        dup = uniq[counts > 1]
        raise DataError(
            f"dataset {name!r}: image_ids must be unique. Got {len(dup)} duplicated id(s), "
            f"e.g. {dup[:3].tolist()}."
        )
    return name, ids, labels, group_str, getattr(dataset, "metadata", None)


def _fixed_targets(
    name: str, policy: SplitPolicy, metadata: Any, group_inverse: np.ndarray, group_ids: np.ndarray
) -> np.ndarray:
    """Split index per group fixed by the official split (-1 = pool)."""
    n_groups = len(group_ids)
    fixed_group = np.full(n_groups, -1, dtype=np.int64)
    if not policy.uses_official:
        return fixed_group
    if metadata is None or "official_split" not in getattr(metadata, "columns", ()):
        cols = list(getattr(metadata, "columns", []))
        raise DataError(
            f"dataset {name!r}: split policy {policy.name!r} must find metadata column "
            f"'official_split'. Got columns {cols} instead (pass policy='grouped' to ignore "
            "official splits)."
        )
    official = metadata["official_split"].astype(str).str.strip().to_numpy()
    if len(official) != len(group_inverse):
        raise DataError(
            f"dataset {name!r}: metadata must have one row per image ({len(group_inverse)}). "
            f"Got {len(official)} rows instead."
        )
    unknown = ~np.isin(official, list(policy.official))
    if unknown.any():
        row = int(np.flatnonzero(unknown)[0])
        raise DataError(
            f"dataset {name!r}: row {row + 1} column official_split must be one of "
            f"{sorted(policy.official)} under split policy {policy.name!r}. Got "
            f"{official[row]!r} instead ({int(unknown.sum())} rows alike)."
        )
    codes = {**{s: i for i, s in enumerate(SPLIT_NAMES)}, POOL: -1}
    row_target = np.array([codes[policy.official[v]] for v in official.tolist()], dtype=np.int64)
    fixed_rows = row_target >= 0
    # a group fixed to two different splits by the official files: leakage in the source
    lo = np.full(n_groups, len(SPLIT_NAMES), dtype=np.int64)
    hi = np.full(n_groups, -1, dtype=np.int64)
    np.minimum.at(lo, group_inverse[fixed_rows], row_target[fixed_rows])
    np.maximum.at(hi, group_inverse[fixed_rows], row_target[fixed_rows])
    conflict = (hi >= 0) & (lo != hi)
    if conflict.any():
        raise DataError(
            f"dataset {name!r}: the official split puts {int(conflict.sum())} group(s) in two "
            f"of our splits under policy {policy.name!r} (patient leakage in the source); "
            f"groups must map to one split. First sha256[:12] of their ids: "
            f"{', '.join(hash_group(g) for g in group_ids[conflict][:5])}."
        )
    fixed_group[hi >= 0] = hi[hi >= 0]
    return fixed_group


def _pool_weights(
    fractions: SplitFractions,
    policy: SplitPolicy,
    fixed_rows: np.ndarray,
    n_rows: int,
    pool_rows: int,
) -> np.ndarray:
    """Share of the pool each split should receive so totals approach ``fractions``.

    Each fill split asks for its deficit ``fraction · n_rows − fixed rows``; a surplus (when
    splits outside ``fill`` hold fewer fixed rows than their fraction) goes to ``train``.
    """
    frac = np.array([fractions.as_dict()[s] for s in SPLIT_NAMES])
    in_fill = np.array([s in policy.fill for s in SPLIT_NAMES])
    deficit = np.where(in_fill, np.maximum(frac * n_rows - fixed_rows, 0.0), 0.0)
    if "train" in policy.fill and deficit.sum() < pool_rows:
        deficit[SPLIT_NAMES.index("train")] += pool_rows - deficit.sum()
    if deficit.sum() <= 0:
        deficit = np.where(in_fill, frac, 0.0)
    if deficit.sum() <= 0:
        deficit = in_fill.astype(np.float64)
    return deficit / deficit.sum()


def make_splits(
    dataset: Any,
    seed: int = 0,
    fractions: SplitFractions | None = None,
    policy: SplitPolicy | str | None = None,
) -> Splits:
    """Grouped, stratified, deterministic train / val / calib / test splits.

    Parameters
    ----------
    dataset : object
        Anything with ``name``, ``image_ids`` (n,), ``labels`` (n, k) float with NaN masks,
        ``groups`` (n,) and optionally ``metadata`` (DataFrame with ``official_split``).
    seed : int, default 0
        Split seed. Together with the dataset name it fixes the result in any process.
    fractions : SplitFractions, optional
        Requested share of all rows per split (default 0.6 / 0.1 / 0.1 / 0.2).
    policy : SplitPolicy, str or None
        How official splits are used; default: ``DEFAULT_POLICIES[dataset.name]``,
        ``grouped`` for unknown names.

    Returns
    -------
    Splits
        No group in two splits (checked).

    Raises
    ------
    ConfigError
        Bad seed, fractions or policy.
    DataError
        Malformed dataset arrays, unmapped official split values, leakage, or too few groups
        for a split with a positive fraction.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"seed must be a non-negative int. Got {seed!r} instead.")
    fractions = SplitFractions() if fractions is None else fractions
    if not isinstance(fractions, SplitFractions):
        raise ConfigError(
            f"fractions must be a SplitFractions. Got {type(fractions).__name__} instead."
        )
    name, ids, labels, groups, metadata = _dataset_arrays(dataset)
    pol = resolve_policy(name, policy)
    group_ids, inverse, positives, rows = group_table(labels, groups)
    fixed = _fixed_targets(name, pol, metadata, inverse, group_ids)

    fixed_rows = np.array([rows[fixed == i].sum() for i in range(len(SPLIT_NAMES))], float)
    pool = np.flatnonzero(fixed < 0)
    group_split = fixed.copy()
    if len(pool):
        weights = _pool_weights(fractions, pol, fixed_rows, len(ids), int(rows[pool].sum()))
        rng = stable_rng("splits", name, int(seed))
        group_split[pool] = assign_groups(positives[pool], rows[pool], weights, rng)

    assignment = np.asarray(SPLIT_NAMES)[group_split[inverse]]
    out = Splits.from_assignment(name, int(seed), pol.name, ids, groups, assignment)
    wanted = fractions.as_dict()
    empty = [s for s, size in out.sizes().items() if size == 0 and wanted[s] > 0]
    if empty:
        raise DataError(
            f"dataset {name!r}: every split with a positive fraction must get at least one "
            f"group. Got empty {empty} from {len(group_ids)} group(s) and {len(ids)} row(s)."
        )
    return out


__all__ = ["Splits", "hash_group", "make_splits", "splits_digest"]
