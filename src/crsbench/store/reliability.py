"""Reliability-diagram bins of a prediction, and the store's derived ``reliability`` table.

The bins are those of the protocol's ECE (15 equal-width bins on [0, 1]): top-label
confidence and accuracy for multi-class, positive-class probability and positive rate
pooled over labels (masked entries left out) for multi-label. They travel inside the run
record's ``details`` and the table is rebuilt from the committed runs after every run, so it
is always consistent with them (and a resumed run rebuilds it the same way).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from crsbench.protocol import ECE_BINS
from crsbench.store.columns import IDENTITY_COLUMNS, RELIABILITY_COLUMNS, RELIABILITY_TABLE
from crsbench.store.reader import select_runs
from crsbench.store.table_specs import RELIABILITY


def reliability_bins(
    y: np.ndarray, prob: np.ndarray, task: str, n_bins: int = ECE_BINS
) -> dict[str, list[float]]:
    """Mean confidence, accuracy and count per non-empty bin (lists aligned by ``bin``)."""
    prob = np.asarray(prob, dtype=np.float64)
    if task == "multiclass":
        conf = prob.max(axis=1)
        acc = (prob.argmax(axis=1) == np.asarray(y)).astype(np.float64)
    else:
        yy = np.asarray(y, dtype=np.float64)
        keep = ~np.isnan(yy)
        conf, acc = prob[keep], yy[keep]
    idx = np.minimum((conf * n_bins).astype(int), n_bins - 1)
    count = np.bincount(idx, minlength=n_bins)
    s_conf = np.bincount(idx, weights=conf, minlength=n_bins)
    s_acc = np.bincount(idx, weights=acc, minlength=n_bins)
    nz = np.flatnonzero(count)
    return {
        "bin": nz.tolist(),
        "conf": np.round(s_conf[nz] / count[nz], 10).tolist(),
        "acc": np.round(s_acc[nz] / count[nz], 10).tolist(),
        "count": count[nz].tolist(),
    }


def reliability_frame(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (run, bin) from the ``details`` of runs that carry reliability bins."""
    out: list[dict[str, Any]] = []
    for row in runs.itertuples(index=False):
        rel = json.loads(row.details or "{}").get("reliability")
        if not rel:
            continue
        for b, c, a, n in zip(rel["bin"], rel["conf"], rel["acc"], rel["count"], strict=True):
            out.append(
                {
                    "encoder": row.encoder,
                    "dataset": row.dataset,
                    "seed": int(row.seed),
                    "recalibrator": row.recalibrator,
                    "bin": int(b),
                    "conf": float(c),
                    "acc": float(a),
                    "count": int(n),
                }
            )
    return pd.DataFrame(out, columns=list(RELIABILITY_COLUMNS))


def rebuild_reliability_table(con: Any) -> int:
    """(Re)create table ``reliability`` from the clean, full-label logistic runs of the frozen
    regime at the last layer, every recalibrator (:func:`~crsbench.store.reader.select_runs`);
    return its row count."""
    cols = ", ".join((*IDENTITY_COLUMNS, "auroc", "ece", "details"))
    runs = con.execute(f"SELECT {cols} FROM runs").df()
    kept = select_runs(runs, recalibrator=None, own_eval=None)
    kept = kept.sort_values(["encoder", "dataset", "seed", "recalibrator"], kind="stable")
    frame = reliability_frame(kept)
    con.register("_reliability", frame)
    try:
        con.execute(RELIABILITY.ddl(replace=True))
        con.execute(f"INSERT INTO {RELIABILITY_TABLE} SELECT * FROM _reliability")
    finally:
        con.unregister("_reliability")
    return len(frame)
