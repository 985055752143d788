"""Grouped, stratified assignment of groups (patients, lesions) to splits.

The algorithm is iterative stratification (Sechidis, Tsoumakas & Vlahavas, ECML 2011)
lifted to groups: every group is an indivisible unit carrying its positive count per label
and its row count. Groups are visited rarest label first (the label of the group with the
fewest positives in the whole pool), in a shuffled order within a label; each goes to the
split with the largest remaining *desired* number of positives of that label, ties broken by
the largest remaining desired number of rows, then at random. Groups with no positive label
go to the split with the largest remaining desired number of rows. Only a stable RNG and
sorted group ids are used, so the result is the same in every process and on every machine.
"""

from __future__ import annotations

import hashlib

import numpy as np

from crsbench.core.errors import DataError


def group_table(
    labels: np.ndarray, groups: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-group positive counts and row counts.

    Parameters
    ----------
    labels : ndarray of shape (n, k)
        Float labels; NaN (masked) counts as not positive, values > 0.5 as positive.
    groups : ndarray of shape (n,)
        Group id of every row.

    Returns
    -------
    group_ids : ndarray of shape (g,)
        Sorted unique group ids.
    inverse : ndarray of shape (n,)
        Index into ``group_ids`` of each row.
    positives : ndarray of shape (g, k)
        Number of positive rows per group and label.
    rows : ndarray of shape (g,)
        Number of rows per group.
    """
    group_ids, inverse = np.unique(groups.astype(str), return_inverse=True)
    inverse = inverse.reshape(-1)
    positive = np.nan_to_num(labels, nan=0.0) > 0.5
    counts = np.zeros((len(group_ids), labels.shape[1]), dtype=np.int64)
    np.add.at(counts, inverse, positive.astype(np.int64))
    rows = np.bincount(inverse, minlength=len(group_ids)).astype(np.int64)
    return group_ids, inverse, counts, rows


def assign_groups(
    positives: np.ndarray,
    rows: np.ndarray,
    weights: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """Assign each group to one split, balancing rows and per-label positives.

    Parameters
    ----------
    positives : ndarray of shape (g, k)
        Positive counts per group and label (groups in sorted-id order).
    rows : ndarray of shape (g,)
        Row counts per group.
    weights : ndarray of shape (s,)
        Desired share of rows (and of each label's positives) per split; non-negative,
        summing to 1. A split with weight 0 receives nothing.
    rng : numpy.random.Generator
        Stable generator (see :func:`crsbench.core.seeding.stable_rng`).

    Returns
    -------
    ndarray of shape (g,)
        Split index of every group.
    """
    n_groups = positives.shape[0]
    n_splits = len(weights)
    if n_groups == 0:
        return np.zeros(0, dtype=np.int64)
    label_totals = positives.sum(axis=0)
    rem_pos = [[float(w) * float(t) for t in label_totals] for w in weights]
    rem_rows = [float(w) * float(rows.sum()) for w in weights]
    active = [s for s in range(n_splits) if weights[s] > 0]

    # rarest label each group carries (by pool-wide positive count); inf when none
    big = np.iinfo(np.int64).max
    present = positives > 0
    rarity = np.where(present, label_totals[None, :], big)
    rarest = rarity.argmin(axis=1)
    rarest_count = rarity[np.arange(n_groups), rarest]
    shuffled_rank = np.empty(n_groups, dtype=np.int64)
    shuffled_rank[rng.permutation(n_groups)] = np.arange(n_groups)
    order = np.lexsort((shuffled_rank, rarest, rarest_count))
    tiebreak = rng.random((n_groups, n_splits)).tolist()

    result = np.empty(n_groups, dtype=np.int64)
    pos_lists = [np.flatnonzero(present[g]).tolist() for g in range(n_groups)]
    pos_values = positives.tolist()
    row_list = rows.tolist()
    for g in order.tolist():
        tie = tiebreak[g]
        if rarest_count[g] != big:
            k = int(rarest[g])
            best = max(active, key=lambda s: (rem_pos[s][k], rem_rows[s], tie[s]))
        else:
            best = max(active, key=lambda s: (rem_rows[s], tie[s]))
        result[g] = best
        counts = pos_values[g]
        split_pos = rem_pos[best]
        for j in pos_lists[g]:
            split_pos[j] -= counts[j]
        rem_rows[best] -= row_list[g]
    return result


def hash_group(group: str) -> str:
    """Short sha256 of a group id, for logs that must not show patient ids."""
    return hashlib.sha256(str(group).encode("utf-8")).hexdigest()[:12]


def check_group_disjoint(
    groups: np.ndarray, assignment: np.ndarray, *, what: str = "splits"
) -> None:
    """Raise :class:`DataError` if any group appears in two splits.

    Parameters
    ----------
    groups : ndarray of shape (n,)
        Group id per row.
    assignment : ndarray of shape (n,)
        Split name per row.
    what : str
        Name of the thing being checked, for the message.
    """
    groups = np.asarray(groups).astype(str)
    assignment = np.asarray(assignment).astype(str)
    pairs = np.unique(np.stack([groups, assignment], axis=1), axis=0) if len(groups) else None
    if pairs is None:
        return
    group_of_pair, n_splits = np.unique(pairs[:, 0], return_counts=True)
    leaking = group_of_pair[n_splits > 1]
    if len(leaking):
        shown = ", ".join(hash_group(g) for g in leaking[:5])
        raise DataError(
            f"{what}: groups must not appear in two splits (patient/lesion leakage). Got "
            f"{len(leaking)} group(s) in more than one split; first sha256[:12] of their ids: "
            f"{shown}."
        )
