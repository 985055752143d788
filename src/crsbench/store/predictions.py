"""Writing per-sample predictions next to the run records (layout:
:mod:`crsbench.store.prediction_layout`).

The pipeline collects a cell's main-protocol predictions
(:mod:`crsbench.evaluation.prediction_keeper`); :func:`prediction_batch` turns them into Arrow
tables and :meth:`crsbench.store.ResultsStore.append` writes them in the same transaction as
the records, so a cell is committed with its predictions or not at all (a resumed run never
sees one without the other). :func:`export_predictions` and :func:`restore_predictions` carry
them through ``export/`` and ``crsbench store repair``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from crsbench.store.prediction_layout import (
    BLOBS_TABLE,
    PREDICTION_TABLES,
    PREDICTIONS_TABLE,
    SPLIT_META_TABLE,
    SPLITS_TABLE,
    content_key,
    encode_matrix,
    encode_probabilities,
)
from crsbench.store.table_specs import BLOBS, PREDICTIONS, SPLIT_META, SPLITS

DDL: dict[str, str] = {t.name: t.ddl() for t in (SPLITS, BLOBS, PREDICTIONS, SPLIT_META)}
#: Every table a batch inserts (the metadata table is optional for readers).
_BATCH_TABLES: tuple[str, ...] = (*PREDICTION_TABLES, SPLIT_META_TABLE)
_ARROW: dict[str, pa.Schema] = {t.name: t.arrow() for t in (SPLITS, BLOBS, PREDICTIONS, SPLIT_META)}


@dataclass(frozen=True, eq=False)
class SplitRows:
    """The rows a prediction is scored on: whose, which split, image ids, patient groups and
    the targets exactly as scored (class indices, or the 0/1/NaN label matrix); ``metadata``:
    subgroup attribute → values per row (:mod:`crsbench.datasets.subgroup_attributes`), a function of
    the image ids, so not part of the key."""

    dataset: str
    split: str
    task: str
    image_ids: np.ndarray
    groups: np.ndarray
    targets: np.ndarray
    metadata: Mapping[str, np.ndarray] = field(default_factory=dict)

    @cached_property
    def key(self) -> str:
        """Content hash: the same rows, groups and targets give the same key in any cell."""
        ids = "\x00".join(map(str, np.asarray(self.image_ids).tolist()))
        grp = "\x00".join(map(str, np.asarray(self.groups).tolist()))
        return content_key([self.dataset, self.split, self.task, ids, grp,
                            encode_matrix(self.targets)])  # fmt: skip


@dataclass(frozen=True)
class PredictionBatch:
    """Arrow tables of one cell's predictions, ready to insert in the records' transaction."""

    tables: Mapping[str, pa.Table]

    @property
    def n_predictions(self) -> int:
        """Rows of ``predictions`` (run × split) in the batch."""
        return int(self.tables[PREDICTIONS_TABLE].num_rows)

    def insert(self, con: Any) -> None:
        """Create the tables when absent and insert, skipping what is already stored (a
        re-run of the same cell stores nothing twice). Call inside a transaction."""
        for name in _BATCH_TABLES:
            con.execute(DDL[name]).fetchall()
            table = self.tables.get(name)
            if table is None:
                continue
            if table.num_rows == 0:
                continue
            con.register("_incoming_pred", table)
            try:
                con.execute(
                    f"INSERT INTO {name} SELECT * FROM _incoming_pred ON CONFLICT DO NOTHING"
                ).fetchall()
            finally:
                con.unregister("_incoming_pred")


def prediction_batch(
    run_keys: Sequence[str], predictions: Sequence[Mapping[str, tuple] | None]
) -> PredictionBatch | None:
    """The tables of the predictions of ``run_keys`` (aligned); None when there are none.

    Each distinct split and each distinct probability matrix is stored once (matrices shared
    by several rows, e.g. the full-label fit every seed reuses, are hashed once).
    """
    splits: dict[str, dict[str, Any]] = {}
    meta: list[dict[str, Any]] = []
    blobs: dict[str, dict[str, Any]] = {}
    refs: list[dict[str, str]] = []
    hashed: dict[int, str] = {}
    for run_key, preds in zip(run_keys, predictions, strict=True):
        for split, (rows, prob) in (preds or {}).items():
            if rows.key not in splits:
                splits[rows.key] = _split_row(rows)
                meta += _meta_rows(rows)
            pk = hashed.get(id(prob))
            if pk is None:
                data, dtype = encode_probabilities(prob, rows.task)
                pk = content_key([str(prob.shape), dtype, data])
                hashed[id(prob)] = pk
                n, k = (prob.shape[0], 1) if prob.ndim == 1 else prob.shape
                blobs[pk] = {"prob_key": pk, "n_rows": n, "n_outputs": k, "dtype": dtype,
                             "prob": data}  # fmt: skip
            refs.append({"run_key": run_key, "split": split, "split_key": rows.key,
                         "prob_key": pk})  # fmt: skip
    if not refs:
        return None
    rows_of = {SPLITS_TABLE: list(splits.values()), BLOBS_TABLE: list(blobs.values()),
               PREDICTIONS_TABLE: refs, SPLIT_META_TABLE: meta}  # fmt: skip
    return PredictionBatch(
        {name: pa.Table.from_pylist(rows_of[name], schema=_ARROW[name]) for name in rows_of}
    )


def _split_row(rows: SplitRows) -> dict[str, Any]:
    t = np.asarray(rows.targets, dtype=np.float64)
    return {
        "split_key": rows.key,
        "dataset": rows.dataset,
        "split": rows.split,
        "task": rows.task,
        "n_rows": int(t.shape[0]),
        "n_targets": 1 if t.ndim == 1 else int(t.shape[1]),
        "image_ids": [str(i) for i in np.asarray(rows.image_ids).tolist()],
        "groups": [str(g) for g in np.asarray(rows.groups).tolist()],
        "targets": encode_matrix(t),
    }


def _meta_rows(rows: SplitRows) -> list[dict[str, Any]]:
    n = len(np.asarray(rows.image_ids))
    out = []
    for attr, vals in sorted(rows.metadata.items()):
        v = [str(x) for x in np.asarray(vals).tolist()]
        if len(v) != n:
            raise ValueError(f"metadata {attr!r} of {rows.dataset}/{rows.split} must have {n} "
                             f"values (one per row). Got {len(v)} instead.")  # fmt: skip
        out.append({"split_key": rows.key, "attribute": attr, "vals": v})
    return out


def has_prediction_tables(con: Any) -> bool:
    """Whether the store has every predictions table (stores written before them do not)."""
    q = "SELECT count(*) FROM information_schema.tables WHERE table_name = ?"
    return all(con.execute(q, [t]).fetchall()[0][0] for t in PREDICTION_TABLES)


def export_predictions(con: Any, folder: Path) -> dict[str, Path]:
    """Write each predictions table to ``folder/<table>.parquet`` (nothing for an older store)."""
    from crsbench.store.export import export_query

    if not has_prediction_tables(con):
        return {}
    q = "SELECT count(*) FROM information_schema.tables WHERE table_name = ?"
    has_meta = con.execute(q, [SPLIT_META_TABLE]).fetchall()[0][0]
    names = (*PREDICTION_TABLES, SPLIT_META_TABLE) if has_meta else PREDICTION_TABLES
    return {
        name: export_query(
            con, f"SELECT * FROM {name} ORDER BY ALL", folder / f"{name}.parquet", "parquet"
        )  # fmt: skip
        for name in names
    }


def restore_predictions(con: Any, folder: Path) -> int:
    """Insert the exported predictions tables of ``folder`` (``crsbench store repair``);
    return how many ``predictions`` rows were restored (0 when the export has none)."""
    paths = {name: folder / f"{name}.parquet" for name in PREDICTION_TABLES}
    if not all(p.is_file() for p in paths.values()):
        return 0
    import pyarrow.parquet as pq

    meta = folder / f"{SPLIT_META_TABLE}.parquet"
    if meta.is_file():
        paths[SPLIT_META_TABLE] = meta
    batch = PredictionBatch({n: pq.read_table(p).cast(_ARROW[n]) for n, p in paths.items()})
    batch.insert(con)
    return batch.n_predictions
