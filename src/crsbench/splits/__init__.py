"""Patient-level splits and nested, stratified label subsamples (pure numpy / pandas).

See ``docs/splits.md`` for the per-dataset policy and the algorithms.
"""

from __future__ import annotations

from crsbench.splits.assign import assign_groups, check_group_disjoint, group_table, hash_group
from crsbench.splits.core import Splits, make_splits, splits_digest
from crsbench.splits.policy import (
    CHEXPERT,
    DEFAULT_POLICIES,
    GROUPED,
    MIMIC_CXR,
    SPLIT_NAMES,
    SplitFractions,
    SplitPolicy,
    resolve_policy,
)
from crsbench.splits.subsample import (
    check_nested,
    drop_rows,
    label_subsamples,
    subsample_size,
)

__all__ = [
    "CHEXPERT",
    "DEFAULT_POLICIES",
    "GROUPED",
    "MIMIC_CXR",
    "SPLIT_NAMES",
    "SplitFractions",
    "SplitPolicy",
    "Splits",
    "assign_groups",
    "check_group_disjoint",
    "check_nested",
    "drop_rows",
    "group_table",
    "hash_group",
    "label_subsamples",
    "make_splits",
    "resolve_policy",
    "splits_digest",
    "subsample_size",
]
