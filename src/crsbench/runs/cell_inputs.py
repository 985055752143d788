"""Assemble a cell's arrays (labels, split indices, features) from a prepared dataset."""

from __future__ import annotations

from typing import Any

import numpy as np

from crsbench.core.errors import DataError
from crsbench.runs.cell import CellData, ShiftData
from crsbench.runs.plan import CellPlan
from crsbench.runs.prepare import PreparedDataset


def _present(fa_ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Boolean mask over ``wanted`` of the ids that have features (quarantined ones do not)."""
    if len(fa_ids) == len(wanted):
        return np.ones(len(wanted), dtype=bool)
    return np.isin(wanted, fa_ids)


def cell_data(
    plan: CellPlan,
    prep: PreparedDataset,
    feats: dict,
    target: PreparedDataset | None,
) -> CellData:
    ds, sp = prep.dataset, prep.splits
    clean = feats["clean"]
    keep = _present(clean[1.0].ids, np.asarray(ds.image_ids))
    test = sp.test[keep[sp.test]]
    perturbed = {}
    for cond, fa in feats["perturbed"].items():
        if not np.array_equal(np.asarray(fa.ids), np.asarray(ds.image_ids)[test]):
            raise DataError(
                f"{plan.dataset}: perturbed features of {cond} are not aligned with "
                "the clean test rows (an image decoded once but not the other time)"
            )
        perturbed[cond] = np.asarray(fa.features)
    shift = None
    if target is not None:
        fa = feats["shift"]
        tids = np.asarray(target.dataset.image_ids)[target.eval_rows]
        rows = _present(fa.ids, tids)
        shift = ShiftData(
            target.dataset.name,
            np.asarray(fa.features),
            target.dataset.labels[target.eval_rows][rows],
            {"shift_rows": target.shift_provenance(rows)},
        )
    return CellData(
        encoder=plan.encoder,
        dataset=plan.dataset,
        task=ds.task,
        n_outputs=len(ds.label_names),
        labels=ds.labels,
        train=sp.train[keep[sp.train]],
        val=sp.val[keep[sp.val]],
        calib=sp.calib[keep[sp.calib]],
        test=test,
        features={d: _expand(fa, keep) for d, fa in clean.items()},
        perturbed=perturbed,
        subsets=prep.subsets,
        shift=shift,
    )


def _expand(fa: Any, keep: np.ndarray) -> np.ndarray:
    """Features aligned with the dataset's rows (rows without features filled with NaN)."""
    X = np.asarray(fa.features)
    if keep.all():
        return X
    full = np.full((len(keep), X.shape[1]), np.nan, dtype=X.dtype)
    full[keep] = X
    return full
