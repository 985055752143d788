"""A toy results store with planted per-sample predictions, written by the store's own writer.

Run rows come from :func:`crsbench.testing.simulate_runs` (one CheXpert cell per encoder,
the MIMIC-CXR shift inside R and NIH ChestX-ray14 as an extra target); every main-protocol row
carries the planted probabilities of :class:`PlantedCell` through
:func:`crsbench.store.predictions.prediction_batch` and
:meth:`crsbench.store.writer.ResultsStore.append_frame`, exactly as the runner stores them.
Every label column repeats one planted score, so a macro AUROC equals the one-column AUROC and
a hand-worked value holds for the table.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from crsbench.protocol import SHIFT
from crsbench.store.files import STORE_FILE
from crsbench.store.prediction_layout import EVAL_SPLIT, SHIFT_SPLIT, VAL_SPLIT
from crsbench.store.predictions import SplitRows, prediction_batch
from crsbench.store.records import make_run_key
from crsbench.testing.planned_store import kept_splits
from crsbench.testing.simulated_store import SIMULATED_CONFIG_HASH, simulate_runs, split_card_facts

DATASET, TARGET, EXTRA_TARGET = "chexpert", "mimic_cxr", "nih_cxr14"
N_LABELS = 14


@dataclass(frozen=True)
class PlantedSplit:
    """Rows of one split: patient of each row, 0/1 target, planted score, metadata."""

    groups: np.ndarray
    y: np.ndarray
    score: np.ndarray
    metadata: Mapping[str, np.ndarray] = field(default_factory=dict)


@dataclass(frozen=True)
class PlantedCell:
    """One encoder's CheXpert cell: test, validation and shift splits, and the score of the
    test rows under each (condition, severity) (default: the clean score)."""

    test: PlantedSplit
    val: PlantedSplit
    shift: PlantedSplit
    extra_shift: PlantedSplit
    perturbed: Mapping[tuple[str, int], np.ndarray] = field(default_factory=dict)


def _rows(ds: str, split: str, s: PlantedSplit, prefix: str) -> SplitRows:
    ids = np.array([f"{prefix}{i}" for i in range(len(s.y))])
    y = np.repeat(np.asarray(s.y, float)[:, None], N_LABELS, axis=1)
    return SplitRows(ds, split, "multilabel", ids, np.asarray(s.groups).astype(str), y,
                     dict(s.metadata))  # fmt: skip


def _prob(score: np.ndarray) -> np.ndarray:
    return np.repeat(np.asarray(score, float)[:, None], N_LABELS, axis=1)


def _predictions(row, cell: PlantedCell, splits: dict[str, SplitRows]) -> dict | None:
    """The predictions the runner keeps for one row (:func:`kept_splits`; None for others)."""
    kept = kept_splits(row)
    if not kept:
        return None
    if row.condition == SHIFT:
        which = "shift" if row.eval_dataset == TARGET else "extra"
        planted = cell.shift if which == "shift" else cell.extra_shift
        return {EVAL_SPLIT: (splits[which], _prob(planted.score))}
    score = cell.perturbed.get((row.condition, int(row.severity)), cell.test.score)
    out = {EVAL_SPLIT: (splits["test"], _prob(score))}
    if VAL_SPLIT in kept:
        out[VAL_SPLIT] = (splits["val"], _prob(cell.val.score))
    return out


def write_prediction_store(store_dir: str | Path, cells: Mapping[str, PlantedCell]) -> Path:
    """Write a store whose CheXpert cells (one per encoder of ``cells``, paper encoder names)
    carry the planted predictions; return ``store_dir/results.duckdb``."""
    from crsbench.store.writer import ResultsStore

    df = simulate_runs(n_encoders=15, datasets=(DATASET,), seeds=1, rng_seed=0,
                       extra_shift_targets=(EXTRA_TARGET,))  # fmt: skip
    df = df[df["encoder"].isin(list(cells))].reset_index(drop=True)
    first = next(iter(cells.values()))
    splits = {"test": _rows(DATASET, EVAL_SPLIT, first.test, "t"),
              "val": _rows(DATASET, VAL_SPLIT, first.val, "v"),
              "shift": _rows(TARGET, SHIFT_SPLIT, first.shift, "s"),
              "extra": _rows(EXTRA_TARGET, SHIFT_SPLIT, first.extra_shift, "x")}  # fmt: skip
    keys, preds = [], []
    for row in df.itertuples(index=False):
        keys.append(make_run_key(row._asdict(), SIMULATED_CONFIG_HASH))
        preds.append(_predictions(row, cells[row.encoder], splits))
    from crsbench.datasets.chexpert import CHEXPERT_LABELS

    frame, facts = split_card_facts(df)
    facts = dataclasses.replace(facts, label_names={DATASET: CHEXPERT_LABELS})
    with ResultsStore(store_dir, SIMULATED_CONFIG_HASH, config_json='{"simulated": true}') as st:
        st.append_frame(frame, prediction_batch(keys, preds))
        st.aggregate()
        st.record_cards(facts)
    return Path(store_dir) / STORE_FILE


#: The four encoders of :func:`toy_cells` and what is planted in each.
TOY_PLANTS: dict[str, str] = {
    "resnet50": "subgroup gap: AUROC 1 on female, 0 on male test rows (0.75 overall)",
    "vit_b16": "threshold transfer: 12 of 20 MIMIC-CXR positives reach the validation "
               "threshold (sensitivity 0.6, lost 0.4)",
    "clip": "threshold transfer on the extra target: 15 of 20 NIH positives (lost 0.25)",
    "dinov2": "flips: 8 of 80 test images fall below the threshold under the first paper "
              "condition at severity 1, with AUROC unchanged",
}  # fmt: skip
FLIP_CONDITION_INDEX = 0


def toy_cells() -> dict[str, PlantedCell]:
    """Four planted CheXpert cells (:data:`TOY_PLANTS`) sharing their rows.

    Test: 80 patients (one image each), 40 female then 40 male, alternating negative /
    positive; view ``AP`` except 5 ``PA`` rows (below the 30-patient minimum). Clean scores
    0.9 (positive) / 0.1 (negative). Validation: 20 positives scored 0.1, 0.1, ..., 1.0, 1.0
    and 20 negatives at 0.05, so the sensitivity-0.90 threshold is 0.2. Shift targets: 20
    positives at 0.5 and 20 negatives at 0.1.
    """
    from crsbench.protocol import PAPER_CONDITIONS

    n = 80
    y = np.tile([0.0, 1.0], n // 2)
    sex = np.where(np.arange(n) < n // 2, "female", "male")
    view = np.where(np.arange(n) < n - 5, "AP", "PA")
    clean = np.where(y == 1, 0.9, 0.1)
    test = PlantedSplit(np.array([f"p{i}" for i in range(n)]), y, clean,
                        {"sex": sex, "view": view})  # fmt: skip
    yv = np.r_[np.ones(20), np.zeros(20)]
    val = PlantedSplit(np.array([f"v{i}" for i in range(40)]), yv,
                       np.r_[np.repeat(np.arange(1, 11) / 10, 2), np.full(20, 0.05)])  # fmt: skip
    ys = np.r_[np.ones(20), np.zeros(20)]

    def target(prefix: str, kept: int) -> PlantedSplit:
        score = np.r_[np.full(kept, 0.5), np.full(20 - kept, 0.1), np.full(20, 0.1)]
        return PlantedSplit(np.array([f"{prefix}{i}" for i in range(40)]), ys, score)

    male = sex == "male"
    backwards = clean.copy()
    backwards[male] = np.where(y[male] == 1, 0.4, 0.6)
    flipped = clean.copy()
    flipped[np.flatnonzero(y == 1)[:8]] = 0.15
    cond = PAPER_CONDITIONS[FLIP_CONDITION_INDEX]
    base = PlantedCell(test, val, shift=target("s", 20), extra_shift=target("x", 20))
    return {
        "resnet50": replace(base, test=PlantedSplit(test.groups, y, backwards, test.metadata)),
        "vit_b16": replace(base, shift=target("s", 12)),
        "clip": replace(base, extra_shift=target("x", 15)),
        "dinov2": replace(base, perturbed={(cond[0], int(cond[1])): flipped}),
    }
