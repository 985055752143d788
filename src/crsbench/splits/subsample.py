"""Nested, stratified label-fraction subsamples of a training split.

For every seed one *priority order* of the training rows is built; the subsample at
fraction ``f`` is the first ``max(ceil(f·n), n_forced)`` rows of that order, so the subsamples
of one seed are nested by construction (1 % ⊂ 5 % ⊂ 10 % ⊂ 25 % ⊂ 100 %).

The order starts with a small *forced* set (one random positive row of every class / label
that has one, and for multi-label one random negative row of every label that has one), then
interleaves the strata by Sainte-Laguë keys ``(j + forced_c + 0.5) / n_c`` (j = rank of the
row in a random permutation of its stratum), so every prefix holds each stratum in proportion
to its size, within about one row. The stratum of a row is its class (multi-class) or its
rarest positive label (multi-label; rows with no positive label form one more stratum).
Everything depends only on the labels, the key and the seed, never on the encoder.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from crsbench.core.errors import ConfigError, DataError
from crsbench.core.seeding import stable_rng
from crsbench.core.types import TASKS
from crsbench.protocol import LABEL_FRACTIONS, SEEDS


def _check_task(task: str) -> str:
    if task not in TASKS:
        raise ConfigError(f"task must be one of {TASKS}. Got {task!r} instead.")
    return task


def _check_labels(labels: np.ndarray, task: str) -> np.ndarray:
    try:
        y = np.asarray(labels, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(f"train_labels must be a numeric (n, k) array. Got {exc}.") from None
    if y.ndim != 2 or y.shape[0] == 0 or y.shape[1] == 0:
        raise DataError(
            f"train_labels must have shape (n_rows >= 1, n_labels >= 1). Got {y.shape} instead."
        )
    finite_ok = np.isnan(y) | (y == 0.0) | (y == 1.0)
    if not finite_ok.all():
        r, c = (int(v) for v in np.argwhere(~finite_ok)[0])
        raise DataError(
            f"train_labels row {r + 1}, column {c + 1} must be 0, 1 or NaN. Got {y[r, c]!r} "
            f"instead ({int((~finite_ok).sum())} cells alike)."
        )
    if task == "multiclass":
        masked = np.isnan(y).all(axis=1)
        ones = np.nansum(y, axis=1)
        bad = ~masked & ((ones != 1.0) | np.isnan(y).any(axis=1))
        if bad.any():
            r = int(np.flatnonzero(bad)[0])
            raise DataError(
                f"train_labels row {r + 1} must be one-hot for a multiclass task (exactly one "
                f"1, or all NaN when masked). Got {y[r].tolist()} instead "
                f"({int(bad.sum())} rows alike)."
            )
    return y


def _check_fractions(fractions: Iterable[float]) -> tuple[float, ...]:
    out = tuple(fractions)
    if not out:
        raise ConfigError("fractions must name at least one fraction in (0, 1]. Got none.")
    for f in out:
        if isinstance(f, bool) or not isinstance(f, (int, float, np.floating, np.integer)):
            raise ConfigError(f"every fraction must be a number in (0, 1]. Got {f!r} instead.")
        if not (math.isfinite(f) and 0.0 < f <= 1.0):
            raise ConfigError(f"every fraction must be in (0, 1]. Got {f!r} instead.")
    if len(set(out)) != len(out):
        raise ConfigError(f"fractions must be distinct. Got {out} instead.")
    return tuple(float(f) for f in out)


def _check_seeds(seeds: Iterable[int]) -> tuple[int, ...]:
    out = tuple(seeds)
    if not out:
        raise ConfigError("seeds must name at least one seed. Got an empty list.")
    for s in out:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 0:
            raise ConfigError(f"every seed must be a non-negative int. Got {s!r} instead.")
    if len(set(out)) != len(out):
        raise ConfigError(f"seeds must be distinct. Got {out} instead.")
    return tuple(int(s) for s in out)


def _strata(y: np.ndarray, task: str) -> np.ndarray:
    """Stratum id per row (class, or rarest positive label; k for "no positive")."""
    positive = np.nan_to_num(y, nan=0.0) > 0.5
    k = y.shape[1]
    if task == "multiclass":
        return np.where(positive.any(axis=1), positive.argmax(axis=1), k)
    totals = positive.sum(axis=0)
    rarity = np.where(positive, totals[None, :], np.iinfo(np.int64).max)
    return np.where(positive.any(axis=1), rarity.argmin(axis=1), k)


def forced_rows(y: np.ndarray, task: str, rng: np.random.Generator) -> np.ndarray:
    """Rows that every subsample contains: the min-positive (and min-negative) guarantee.

    Parameters
    ----------
    y : ndarray of shape (n, k)
        Checked labels (0, 1, NaN).
    task : {"multiclass", "multilabel"}
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of int64
        Row indices, in the order they were chosen.
    """
    positive = np.nan_to_num(y, nan=0.0) > 0.5
    negative = y == 0.0
    chosen: list[int] = []
    covered_pos = np.zeros(y.shape[1], dtype=bool)
    covered_neg = np.zeros(y.shape[1], dtype=bool)
    totals = positive.sum(axis=0)
    for k in np.lexsort((np.arange(y.shape[1]), totals)).tolist():  # rarest label first
        if totals[k] == 0 or covered_pos[k]:
            continue
        rows = np.flatnonzero(positive[:, k])
        row = int(rows[rng.integers(len(rows))])
        chosen.append(row)
        covered_pos |= positive[row]
        covered_neg |= negative[row]
    if task == "multilabel":
        for k in range(y.shape[1]):
            rows = np.flatnonzero(negative[:, k])
            if len(rows) == 0 or covered_neg[k]:
                continue
            row = int(rows[rng.integers(len(rows))])
            chosen.append(row)
            covered_neg |= negative[row]
    return np.asarray(chosen, dtype=np.int64)


def priority_order(y: np.ndarray, task: str, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """Order of the training rows whose prefixes are the nested subsamples.

    Returns
    -------
    order : ndarray of int64, shape (n,)
        A permutation of ``range(n)``.
    n_forced : int
        Length of the forced prefix every subsample keeps.
    """
    n = int(y.shape[0])
    forced = forced_rows(y, task, rng)
    strata = _strata(y, task)
    is_forced = np.zeros(n, dtype=bool)
    is_forced[forced] = True
    keys = np.full(n, -1.0)
    for c in np.unique(strata).tolist():
        members = np.flatnonzero(strata == c)
        n_c = len(members)
        free = members[~is_forced[members]]
        free = free[rng.permutation(len(free))]
        f_c = n_c - len(free)
        keys[free] = (f_c + np.arange(len(free)) + 0.5) / n_c
    tiebreak = rng.random(n)
    rest = np.flatnonzero(~is_forced)
    rest = rest[np.lexsort((tiebreak[rest], keys[rest]))]
    return np.concatenate([forced, rest]).astype(np.int64), len(forced)


def subsample_size(fraction: float, n: int, n_forced: int) -> int:
    """``min(n, max(ceil(fraction · n), n_forced))``, robust to float error in ``f · n``."""
    return int(min(n, max(math.ceil(round(fraction * n, 9)), n_forced)))


def label_subsamples(
    train_labels: np.ndarray,
    task: str,
    fractions: Sequence[float] = LABEL_FRACTIONS,
    seeds: Sequence[int] = SEEDS,
    key: str = "dataset",
) -> dict[tuple[float, int], np.ndarray]:
    """Nested, stratified label-fraction subsamples with a min-positive guarantee.

    Parameters
    ----------
    train_labels : ndarray of shape (n, k)
        Labels of the training split (one-hot for multi-class; 0/1/NaN for multi-label).
    task : {"multiclass", "multilabel"}
    fractions : sequence of float, default :data:`crsbench.protocol.LABEL_FRACTIONS`
        Each in (0, 1], distinct.
    seeds : sequence of int, default :data:`crsbench.protocol.SEEDS`
        Non-negative, distinct.
    key : str, default "dataset"
        Stream name (use the dataset name and split digest): the rows depend only on the
        labels, ``key`` and the seed, so every encoder gets the same rows.

    Returns
    -------
    dict
        ``{(fraction, seed): sorted int64 indices into the training split}``; size
        ``max(ceil(fraction · n), n_forced)``, capped at ``n``.

    Raises
    ------
    ConfigError
        Bad task, fractions or seeds.
    DataError
        Labels of the wrong shape or outside {0, 1, NaN}; multi-class rows not one-hot.
    """
    task = _check_task(task)
    y = _check_labels(train_labels, task)
    fracs = _check_fractions(fractions)
    seed_list = _check_seeds(seeds)
    n = int(y.shape[0])
    out: dict[tuple[float, int], np.ndarray] = {}
    for seed in seed_list:
        order, n_forced = priority_order(y, task, stable_rng("label_subsample", key, seed))
        for f in fracs:
            rows = np.sort(order[: subsample_size(f, n, n_forced)])
            rows.setflags(write=False)
            out[(f, seed)] = rows
    return out


def drop_rows(
    subsamples: Mapping[tuple[float, int], np.ndarray], kept: np.ndarray
) -> dict[tuple[float, int], np.ndarray]:
    """The subsamples of the full training split after some of its rows were removed.

    The subsamples stay defined on the full split (so every encoder shares them); removing a
    row (a quarantined image) only drops it and renumbers the others, it never re-draws:
    each returned subsample holds exactly the kept rows of the original one.

    Parameters
    ----------
    subsamples : mapping
        ``{(fraction, seed): indices into the full training split}`` (:func:`label_subsamples`).
    kept : ndarray of bool, shape (n_train,)
        Which rows of the full training split remain.

    Returns
    -------
    dict
        ``{(fraction, seed): sorted int64 indices into the kept rows}`` (``train[kept]``).

    Raises
    ------
    DataError
        ``kept`` is shorter than an index needs, or a subsample loses every row.
    """
    kept = np.asarray(kept, dtype=bool)
    new_position = np.cumsum(kept) - 1
    out: dict[tuple[float, int], np.ndarray] = {}
    for key, rows in subsamples.items():
        rows = np.asarray(rows, dtype=np.int64)
        if len(rows) and (rows.min() < 0 or rows.max() >= len(kept)):
            raise DataError(
                f"subsample {key} indices must be in [0, {len(kept)}) (the training split). "
                f"Got range [{rows.min()}, {rows.max()}] instead."
            )
        remapped = np.sort(new_position[rows[kept[rows]]]).astype(np.int64)
        if len(rows) and not len(remapped):
            raise DataError(
                f"subsample {key} must keep at least one row. Got none: all its "
                f"{len(rows)} row(s) are quarantined images."
            )
        remapped.setflags(write=False)
        out[key] = remapped
    return out


def check_nested(
    subsamples: Mapping[tuple[float, int], np.ndarray],
    train_labels: np.ndarray | None = None,
    task: str | None = None,
) -> None:
    """Verify nestedness (and, given labels, the min-positive guarantee).

    Parameters
    ----------
    subsamples : mapping
        Output of :func:`label_subsamples`.
    train_labels : ndarray of shape (n, k), optional
        When given, indices must be in range and every subsample must hold a positive of each
        label the full split has (multi-label: also a negative where the split has one).
    task : {"multiclass", "multilabel"}, optional
        Needed with ``train_labels``.

    Raises
    ------
    DataError
        The first violation found, naming fraction and seed.
    """
    y = None
    if train_labels is not None:
        if task is None:
            raise ConfigError("check_nested: task must be given with train_labels. Got None.")
        y = _check_labels(train_labels, _check_task(task))
    by_seed: dict[int, list[float]] = {}
    for f, seed in subsamples:
        by_seed.setdefault(seed, []).append(f)
    for seed, fracs in sorted(by_seed.items()):
        previous: np.ndarray | None = None
        prev_f = None
        for f in sorted(fracs):
            rows = np.asarray(subsamples[(f, seed)])
            if len(np.unique(rows)) != len(rows):
                raise DataError(f"subsample ({f}, seed {seed}) must not repeat rows.")
            if previous is not None and not np.isin(previous, rows).all():
                missing = int((~np.isin(previous, rows)).sum())
                raise DataError(
                    f"subsamples of seed {seed} must be nested: fraction {prev_f} must be inside "
                    f"fraction {f}. Got {missing} row(s) outside."
                )
            if y is not None:
                _check_coverage(y, rows, f, seed, task or "")
            previous, prev_f = rows, f


def _check_coverage(y: np.ndarray, rows: np.ndarray, f: float, seed: int, task: str) -> None:
    if len(rows) and (rows.min() < 0 or rows.max() >= len(y)):
        raise DataError(
            f"subsample ({f}, seed {seed}) indices must be in [0, {len(y)}). "
            f"Got range [{rows.min()}, {rows.max()}] instead."
        )
    has_pos = (np.nan_to_num(y, nan=0.0) > 0.5).any(axis=0)
    sub_pos = (np.nan_to_num(y[rows], nan=0.0) > 0.5).any(axis=0)
    lacking = np.flatnonzero(has_pos & ~sub_pos)
    if len(lacking):
        raise DataError(
            f"subsample ({f}, seed {seed}) must hold a positive of every label the training "
            f"split has. Got none for label column(s) {(lacking + 1).tolist()} (1-based)."
        )
    if task == "multilabel":
        lacking = np.flatnonzero((y == 0.0).any(axis=0) & ~(y[rows] == 0.0).any(axis=0))
        if len(lacking):
            raise DataError(
                f"subsample ({f}, seed {seed}) must hold a negative of every label the "
                f"training split has one of. Got none for column(s) {(lacking + 1).tolist()}."
            )
