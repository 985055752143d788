"""The per-sample predictions of the main protocol's runs, read from a store (read-only).

The main protocol's rows are those :func:`crsbench.store.reader.select_runs` keeps by default
(frozen regime, logistic probe, final layer, no recalibration); their stored predictions on the
evaluation and validation splits are what the test-set bootstrap and the prediction analyses
resample (:mod:`crsbench.stats.store_predictions` builds its cells from these tables). The
queries are built here, from the same constants, so no layer above the store writes SQL.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from crsbench.protocol import FROZEN
from crsbench.store.cards import CARDS_TABLE
from crsbench.store.files import STORE_FILE
from crsbench.store.prediction_layout import (
    BLOBS_TABLE,
    EVAL_SPLIT,
    PREDICTION_TABLES,
    PREDICTIONS_TABLE,
    SPLIT_META_TABLE,
    SPLITS_TABLE,
    VAL_SPLIT,
)
from crsbench.store.reader import MAIN_LAYER, MAIN_PROBE, NO_RECALIBRATION, read_queries

_MAIN = (
    f"FROM runs r JOIN {PREDICTIONS_TABLE} p ON p.run_key = r.run_key "
    f"WHERE p.split IN ('{EVAL_SPLIT}', '{VAL_SPLIT}') AND r.regime = '{FROZEN}' "
    f"AND r.probe = '{MAIN_PROBE}' AND abs(r.layer - {MAIN_LAYER}) < 1e-9 "
    f"AND r.recalibrator = '{NO_RECALIBRATION}'"
)
_QUERIES = {
    "rows": "SELECT r.encoder, r.dataset, r.eval_dataset, r.seed, r.fraction, r.condition, "
    f"r.severity, p.split, p.split_key, p.prob_key {_MAIN}",
    "blobs": f"SELECT * FROM {BLOBS_TABLE} WHERE prob_key IN (SELECT p.prob_key {_MAIN})",
    "splits": f"SELECT * FROM {SPLITS_TABLE} WHERE split_key IN (SELECT p.split_key {_MAIN})",
    "meta": f"SELECT * FROM {SPLIT_META_TABLE} WHERE split_key IN (SELECT p.split_key {_MAIN})",
    CARDS_TABLE: f"SELECT * FROM {CARDS_TABLE}",
}
_BASE = ("runs", *PREDICTION_TABLES)
_NEEDS = {"rows": _BASE, "blobs": _BASE, "splits": _BASE, "meta": (*_BASE, SPLIT_META_TABLE)}


def read_main_predictions(store_dir: str | Path) -> dict[str, pd.DataFrame]:
    """The main protocol's stored predictions of ``store_dir``'s store.

    Returns
    -------
    dict
        ``rows`` (each kept prediction's run identity, split and content keys), ``blobs``
        (the probability matrices), ``splits`` (the rows they are scored on), ``meta`` (the
        rows' subgroup values) and ``cards``; a table the store lacks leaves its entries out
        (no ``rows``: the store keeps no predictions).

    Raises
    ------
    StoreError
        The store is missing, locked or damaged.
    """
    return read_queries(Path(store_dir) / STORE_FILE, _QUERIES, _NEEDS)
