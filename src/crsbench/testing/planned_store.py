"""A results store of exactly a plan's run records, with planted predictions at real sizes.

:func:`write_planned_store` takes the identities a config plans (the planner's
:class:`~crsbench.store.records.RunIdentity` rows, one frame for every cell), plants their
metrics from :func:`crsbench.testing.simulate_runs` (:func:`plant_metrics`) and their per-sample
predictions at the sizes of :data:`PAPER_SIZES` times a scale, and writes them one cell per
transaction through :meth:`crsbench.store.writer.ResultsStore.append_frame` with
:func:`crsbench.store.predictions.prediction_batch`, as the runner commits a cell. Predictions
are kept for the rows :func:`kept_splits` names (the runner's rule). The full-label fit is the
same model in every seed, so its matrices are planted once per cell and stored once.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit, softmax

from crsbench.protocol import CLEAN, FROZEN, PAPER_PERTURBATIONS, SHIFT
from crsbench.store.cards import CardFacts
from crsbench.store.columns import IDENTITY_COLUMNS
from crsbench.store.files import STORE_FILE
from crsbench.store.prediction_layout import EVAL_SPLIT, SHIFT_SPLIT, VAL_SPLIT
from crsbench.store.predictions import SplitRows, prediction_batch
from crsbench.store.records import make_run_key
from crsbench.store.stored_plan import StoredPlan
from crsbench.testing.simulated_store import (
    SHIFT_TARGET,
    SIMULATED_CONFIG_HASH,
    simulate_runs,
    split_card_facts,
)


@dataclass(frozen=True)
class SplitSize:
    """Rows (images) and patients of one evaluation split at full size."""

    n_rows: int
    n_patients: int


#: Evaluation rows of the paper's splits, ``(dataset, split)`` → size. Probe datasets: the
#: 20 % test and 10 % validation shares of docs/splits.md (CheXpert: of its 191,027 frontal
#: images of ~64,500 patients; ISIC 2019: 25,331 images, ~0.8 lesion groups per image; APTOS
#: 2019: 3,662 images, one per patient). Shift targets: their evaluation rows (MIMIC-CXR's
#: official test frontal images, NIH's test_list.txt, PadChest's frontal images, VinDr's
#: official test set). Approximate public figures: sizes, not exact counts.
PAPER_SIZES: dict[tuple[str, str], SplitSize] = {
    ("chexpert", EVAL_SPLIT): SplitSize(38_205, 12_900),
    ("chexpert", VAL_SPLIT): SplitSize(19_103, 6_450),
    ("isic2019", EVAL_SPLIT): SplitSize(5_066, 4_050),
    ("isic2019", VAL_SPLIT): SplitSize(2_533, 2_025),
    ("aptos2019", EVAL_SPLIT): SplitSize(732, 732),
    ("aptos2019", VAL_SPLIT): SplitSize(366, 366),
    ("mimic_cxr", SHIFT_SPLIT): SplitSize(3_400, 290),
    ("nih_cxr14", SHIFT_SPLIT): SplitSize(25_596, 2_797),
    ("padchest", SHIFT_SPLIT): SplitSize(108_000, 45_000),
    ("vindr_cxr", SHIFT_SPLIT): SplitSize(3_000, 3_000),
}
#: Fewest rows of a scaled split (enough for every class of a 14-label or 8-class task).
MIN_ROWS = 40
#: Labels of an extra shift target left unlabelled (NaN), as the simulated store plants them.
UNCOMPARED_LABELS = 3


def scaled(size: SplitSize, scale: float) -> SplitSize:
    """``size`` times ``scale`` (at least :data:`MIN_ROWS` rows, patients ≤ rows)."""
    rows = max(MIN_ROWS, math.ceil(size.n_rows * scale))
    return SplitSize(rows, max(2, min(rows, math.ceil(size.n_patients * scale))))


def kept_splits(row) -> tuple[str, ...]:
    """The splits whose predictions the runner keeps for run ``row`` (identity columns as
    attributes): main-protocol rows only (frozen, logistic, last layer, no recalibrator), the
    clean test set at every fraction (and validation at full labels), every perturbed
    condition and shift target at full labels (see :mod:`crsbench.evaluation.prediction_keeper`)."""
    main = (row.regime == FROZEN and row.probe == "logistic" and row.layer == 1.0
            and row.recalibrator == "none")  # fmt: skip
    if not main or (row.condition != CLEAN and row.fraction != 1.0):
        return ()
    if row.condition == CLEAN and row.fraction == 1.0 and row.eval_dataset == row.dataset:
        return (EVAL_SPLIT, VAL_SPLIT)
    return (EVAL_SPLIT,)


def plant_metrics(planned: pd.DataFrame, rng_seed: int = 0) -> pd.DataFrame:
    """Run rows of exactly the identities of ``planned`` with simulated metrics.

    Each identity takes the metrics and provenance of :func:`simulate_runs`'s row of the same
    identity, else of the nearest one it simulates: the logistic probe for a control probe,
    no recalibrator for a recalibrated shift row, the last paper perturbation at the same
    severity for a condition it does not simulate.
    """
    p = planned[list(IDENTITY_COLUMNS)].reset_index(drop=True)
    targets = dict.fromkeys(p.loc[p["condition"] == SHIFT, "eval_dataset"])
    extras = tuple(t for t in targets if t not in SHIFT_TARGET.values())
    sim = simulate_runs(n_encoders=15, seeds=int(p["seed"].max()) + 1, rng_seed=rng_seed,
                        datasets=tuple(dict.fromkeys(p["dataset"])),
                        extra_shift_targets=extras)  # fmt: skip
    sim = sim.drop_duplicates(list(IDENTITY_COLUMNS)).set_index(list(IDENTITY_COLUMNS))
    known = set(PAPER_PERTURBATIONS) | {CLEAN, SHIFT}
    steps: list[Callable[[pd.DataFrame], pd.DataFrame]] = [
        lambda d: d,
        lambda d: d.assign(probe="logistic"),
        lambda d: d.assign(recalibrator="none"),
        lambda d: d.assign(condition=d["condition"].where(d["condition"].isin(known),
                                                          PAPER_PERTURBATIONS[-1])),
    ]  # fmt: skip
    source = np.full(len(p), -1)
    look = p
    for step in steps:
        look = step(look)
        todo = np.flatnonzero(source < 0)
        source[todo] = sim.index.get_indexer(pd.MultiIndex.from_frame(look.iloc[todo]))
    if (source < 0).any():
        raise ValueError(f"no simulated row near {p.iloc[np.argmin(source)].to_dict()}")
    return pd.concat([p, sim.iloc[source].reset_index(drop=True)], axis=1)


def _groups(n_rows: int, n_patients: int, prefix: str) -> np.ndarray:
    return np.array([f"{prefix}{i}" for i in np.arange(n_rows) * n_patients // n_rows])


def planted_split(
    dataset: str, split: str, size: SplitSize, task: str, n_outputs: int, seed: int
) -> SplitRows:
    """Rows of one split: ids, patients (consecutive images), planted targets, sex and age."""
    n, tag = size.n_rows, f"{dataset}:{split}:"
    rng = np.random.default_rng([seed, zlib.crc32(tag.encode())])
    if task == "multiclass":
        weights = 0.5 ** np.arange(n_outputs)
        y = rng.choice(n_outputs, n, p=weights / weights.sum())
        y[:n_outputs] = np.arange(n_outputs)  # every class present
    else:
        prevalence = np.linspace(0.02, 0.5, n_outputs)
        y = (rng.random((n, n_outputs)) < prevalence).astype(np.float64)
        y[: 2 * n_outputs : 2], y[1 : 2 * n_outputs : 2] = 1.0, 0.0  # both values per label
        if split == SHIFT_SPLIT and dataset != "mimic_cxr":
            y[:, n_outputs - UNCOMPARED_LABELS :] = np.nan
    meta = {"sex": rng.choice(np.array(["female", "male"]), n),
            "age": rng.integers(18, 90, n).astype(str)}  # fmt: skip
    ids = np.array([f"{tag}{i}" for i in range(n)])
    return SplitRows(dataset, split, task, ids, _groups(n, size.n_patients, tag), y, meta)


def planted_prob(rows: SplitRows, signal: float, rng: np.random.Generator) -> np.ndarray:
    """Float64 probabilities of a probe separating the targets by ``signal`` (binormal)."""
    y = np.asarray(rows.targets)
    if rows.task == "multiclass":
        k = int(y.max()) + 1 if y.size else 1
        logits = rng.normal(size=(len(y), k))
        logits[np.arange(len(y)), y] += signal
        return softmax(logits, axis=1)
    return expit(signal * np.nan_to_num(y, nan=0.0) + rng.normal(size=y.shape) - signal / 2)


class _CellPlanter:
    """The planted predictions of one cell: one matrix per fitted model and evaluation rows."""

    def __init__(self, splits: Mapping[str, SplitRows], seed: int) -> None:
        self.splits = splits
        self.cache: dict[tuple, np.ndarray] = {}
        self.rng = np.random.default_rng(seed)

    def matrix(self, row, split: str) -> tuple[SplitRows, np.ndarray]:
        rows = self.splits[row.eval_dataset if row.condition == SHIFT else split]
        model = (row.fraction, row.seed if row.fraction != 1.0 else None)
        key = (model, split, row.eval_dataset, row.condition, row.severity)
        if key not in self.cache:
            signal = 1.5 * (0.8 + 0.2 * row.fraction) - 0.05 * row.severity
            self.cache[key] = planted_prob(rows, signal, self.rng)
        return rows, self.cache[key]

    def predictions(self, row) -> dict | None:
        kept = kept_splits(row)
        return {s: self.matrix(row, s) for s in kept} if kept else None


def _cell_splits(dataset, targets, scale, cards, seed) -> dict[str, SplitRows]:
    task, names = cards[dataset]
    wanted = [(dataset, EVAL_SPLIT), (dataset, VAL_SPLIT), *((t, SHIFT_SPLIT) for t in targets)]
    return {(s if d == dataset else d): planted_split(d, s, scaled(PAPER_SIZES[(d, s)], scale),
                                                       task, len(names), seed)
            for d, s in wanted}  # fmt: skip


@dataclass(frozen=True)
class WrittenStore:
    """What :func:`write_planned_store` wrote: the file, its records and prediction rows."""

    path: Path
    n_records: int
    n_predictions: int


def write_planned_store(
    store_dir: str | Path,
    planned: pd.DataFrame,
    cards: Mapping[str, tuple[str, tuple[str, ...]]],
    scale: float = 1.0,
    seed: int = 0,
    plan: StoredPlan | None = None,
) -> WrittenStore:
    """Write the planned identities with planted metrics and predictions, one cell per batch.

    Parameters
    ----------
    store_dir : str or Path
        New store folder.
    planned : pandas.DataFrame
        One row per planned run (the identity columns), cells in plan order.
    cards : mapping
        Dataset → (task, label names) of every probe dataset.
    scale : float
        Multiplies every split size of :data:`PAPER_SIZES`.
    seed : int
        Seed of the planted metrics and predictions.
    plan : StoredPlan, optional
        What each cell must hold, recorded as ``crsbench run`` records it.
    """
    from crsbench.store.writer import ResultsStore

    runs, groups = split_card_facts(plant_metrics(planned, seed))
    facts = CardFacts(groups.encoder_groups, {d: names for d, (_, names) in cards.items()})
    n_pred, split_cache = 0, {}
    with ResultsStore(store_dir, SIMULATED_CONFIG_HASH, config_json='{"simulated": true}') as st:
        for (enc, ds), cell in runs.groupby(["encoder", "dataset"], sort=False):
            targets = tuple(dict.fromkeys(cell.loc[cell["condition"] == SHIFT, "eval_dataset"]))
            if ds not in split_cache:
                split_cache[ds] = _cell_splits(ds, targets, scale, cards, seed)
            planter = _CellPlanter(split_cache[ds], zlib.crc32(f"{seed}:{enc}:{ds}".encode()))
            keys, preds = [], []
            for row in cell.itertuples(index=False):
                keys.append(make_run_key(row._asdict(), SIMULATED_CONFIG_HASH))
                preds.append(planter.predictions(row))
            batch = prediction_batch(keys, preds)
            n_pred += batch.n_predictions if batch is not None else 0
            st.append_frame(cell.reset_index(drop=True), batch)
        st.aggregate()
        st.record_cards(facts)
        if plan is not None:
            st.record_plan(plan)
        n_records = st.count()
    return WrittenStore(Path(store_dir) / STORE_FILE, n_records, n_pred)
