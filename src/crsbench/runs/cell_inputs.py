"""Assemble a cell's arrays (labels, split indices, features) from a prepared dataset."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from crsbench.core.errors import DataError
from crsbench.datasets.bad_images import refuse_bad_images
from crsbench.datasets.subgroup_attributes import subgroup_columns
from crsbench.evaluation.cell import CellData, ShiftData
from crsbench.runs.plan import CellPlan
from crsbench.runs.prepare import PreparedDataset


def _present(fa_ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Boolean mask over ``wanted`` of the ids that have features (quarantined ones do not)."""
    if len(fa_ids) == len(wanted):
        return np.ones(len(wanted), dtype=bool)
    return np.isin(wanted, fa_ids)


def quarantine_entries(
    dataset: str,
    image_ids: np.ndarray,
    split_of_row: np.ndarray,
    keep: np.ndarray,
    reported: list[dict[str, str]],
) -> list[dict[str, str]]:
    """One entry per row without features: dataset, split, image id, path and reason.

    ``reported`` are the extraction's quarantine records (by image id); a row missing from
    the features but not reported (which should not happen) is named with reason
    ``no_features``.
    """
    by_id = {q["image_id"]: q for q in reported}
    out = []
    for row in np.flatnonzero(~keep).tolist():
        image_id = str(image_ids[row])
        q = by_id.get(image_id, {"path": "", "error_class": "no_features", "message": ""})
        out.append(
            {
                "dataset": dataset,
                "split": str(split_of_row[row]),
                "image_id": image_id,
                "path": q["path"],
                "error_class": q["error_class"],
                "message": q["message"],
            }
        )
    return out


def _split_of_rows(n: int, splits: Any) -> np.ndarray:
    """The split name of every dataset row (``""`` for a row in no split)."""
    from crsbench.splits import SPLIT_NAMES

    out = np.full(n, "", dtype=object)
    for name in SPLIT_NAMES:
        out[np.asarray(getattr(splits, name))] = name
    return out


def _count_by_split(entries: list[dict[str, str]], names: tuple[str, ...]) -> dict[str, int]:
    return {name: sum(e["split"] == name for e in entries) for name in names}


def _shift_data(
    source: Any, target: PreparedDataset, fa: Any, reported: list[dict[str, str]]
) -> tuple[ShiftData, list[dict[str, str]]]:
    """The shift target's evaluation rows that decoded, and the quarantined others."""
    tds = target.dataset
    tids = np.asarray(tds.image_ids)[target.eval_rows]
    rows = _present(fa.ids, tids)
    entries = quarantine_entries(
        tds.name, tids, np.full(len(tids), "shift", dtype=object), rows, reported
    )
    # the budget is over the rows the shift evaluates, not the whole target dataset
    refuse_bad_images(tds.name, [(e["path"], e["error_class"]) for e in entries], len(tids))
    y, compared = shift_labels(source, tds, tds.labels[target.eval_rows][rows])
    shift = ShiftData(
        tds.name,
        np.asarray(fa.features),
        y,
        target.shift_details(rows),
        image_ids=tids[rows],
        groups=np.asarray(tds.groups)[target.eval_rows][rows],
        compared=compared,
        label_names=tuple(source.label_names),
        metadata={
            k: v[target.eval_rows][rows] for k, v in subgroup_columns(tds.metadata).items()
        },  # fmt: skip
    )
    return shift, entries


def shift_labels(source: Any, target: Any, y: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """The target labels ``y`` a shift scores, and its compared-label mask.

    Only the labels both datasets provide are compared (:mod:`crsbench.core.shift_labels`):
    the target's other label columns are set to NaN (left out of its metrics). The mask is
    returned when it leaves out a label the source provides (each record then also carries the
    source's clean AUROC on the compared labels), else ``None``. Multiclass: unchanged.
    """
    from crsbench.core.shift_labels import compared_label_mask, restricts_source

    y = np.array(y, dtype=np.float64)
    if source.task != "multilabel":
        return y, None
    mask = compared_label_mask(source.name, source.label_names, source.provided_label_names,
                               target.name, target.label_names, target.provided_label_names)  # fmt: skip
    y[:, ~mask] = np.nan
    return y, (mask if restricts_source(mask, source.label_names,
                                        source.provided_label_names) else None)  # fmt: skip


def shift_cells(
    ds: Any, targets: Mapping[str, PreparedDataset], feats: dict
) -> tuple[tuple[ShiftData, ...], list[dict[str, str]]]:
    """Every shift target's :class:`ShiftData` (in ``targets`` order) and their quarantined
    rows."""
    shifts, entries = [], []
    quarantined = feats.get("shift_quarantined", {})
    for name, target in targets.items():
        shift, found = _shift_data(ds, target, feats["shift"][name], quarantined.get(name, []))
        shifts.append(shift)
        entries += found
    return tuple(shifts), entries


def cell_data(
    plan: CellPlan,
    prep: PreparedDataset,
    feats: dict,
    targets: Mapping[str, PreparedDataset] | None,
) -> CellData:
    """The arrays of one cell, quarantined images left out of every split.

    Rows without features (images that could not be decoded) are dropped from their split
    and the label subsamples are renumbered (:func:`crsbench.splits.drop_rows`), never
    re-drawn. More bad images than :mod:`crsbench.datasets.bad_images` allows is refused.
    ``targets`` are the cell's shift targets by name (``None``: none).
    """
    from crsbench.splits import SPLIT_NAMES, drop_rows

    ds, sp = prep.dataset, prep.splits
    clean = feats["clean"]
    ids = np.asarray(ds.image_ids)
    keep = _present(clean[1.0].ids, ids)
    entries = quarantine_entries(
        plan.dataset, ids, _split_of_rows(len(ids), sp), keep, feats.get("quarantined", [])
    )
    refuse_bad_images(plan.dataset, [(e["path"], e["error_class"]) for e in entries], len(ids))
    counts = _count_by_split(entries, SPLIT_NAMES)
    test = sp.test[keep[sp.test]]
    perturbed = {}
    for cond, fa in feats["perturbed"].items():
        if not np.array_equal(np.asarray(fa.ids), ids[test]):
            raise DataError(
                f"{plan.dataset}: perturbed features of {cond} are not aligned with "
                "the clean test rows (an image decoded once but not the other time)"
            )
        perturbed[cond] = np.asarray(fa.features)
    shifts: tuple[ShiftData, ...] = ()
    if targets:
        shifts, shift_entries = shift_cells(ds, targets, feats)
        entries += shift_entries
        counts["shift"] = len(shift_entries)
    train_kept = keep[sp.train]
    return CellData(
        encoder=plan.encoder,
        dataset=plan.dataset,
        task=ds.task,
        n_outputs=len(ds.label_names),
        labels=ds.labels,
        train=sp.train[train_kept],
        val=sp.val[keep[sp.val]],
        calib=sp.calib[keep[sp.calib]],
        test=test,
        features={d: _expand(fa, keep) for d, fa in clean.items()},
        perturbed=perturbed,
        subsets=prep.subsets if train_kept.all() else drop_rows(prep.subsets, train_kept),
        shifts=shifts,
        n_quarantined=counts,
        quarantined=tuple(entries),
        image_ids=ids,
        groups=np.asarray(ds.groups),
        metadata=subgroup_columns(ds.metadata),
    )


def _expand(fa: Any, keep: np.ndarray) -> np.ndarray:
    """Features aligned with the dataset's rows (rows without features filled with NaN)."""
    X = np.asarray(fa.features)
    if keep.all():
        return X
    full = np.full((len(keep), X.shape[1]), np.nan, dtype=X.dtype)
    full[keep] = X
    return full
