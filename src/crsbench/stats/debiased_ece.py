"""The debiased-ECE interval (Kumar et al. 2019), kept beside the protocol's ECE interval
for comparison on planted truth (``benchmarks/coverage.py``); not reported by crsbench."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from crsbench.stats.cell_predictions import CellPredictions
from crsbench.stats.replicate_values import per_seed_values, replicate_weights
from crsbench.stats.resample import (
    DEFAULT_REPLICATES,
    SEED_STREAM,
    replicate_ids,
    resample_counts_for,
)
from crsbench.stats.weighted_metrics import weighted_debiased_ece, weighted_ece

_CHUNK = 250


def debiased_ece_intervals(
    cells: Sequence[CellPredictions],
    n_replicates: int = DEFAULT_REPLICATES,
    seed: int = 0,
    level: float = 0.95,
) -> pd.DataFrame:
    """Bootstrap interval of each cell's population ECE around the debiased estimate.

    Same paired replicates as :func:`patient_seed_bootstrap`, but each replicate's ECE is
    :func:`crsbench.stats.weighted_metrics.weighted_debiased_ece`: the plug-in's upward bias,
    larger on the population side than the bootstrap reproduces, no longer shifts the
    interval. The pivot is the basic interval's: a replicate's debiased ECE minus the ECE of
    the world it was drawn from (the test set as drawn, whose ECE is the plug-in) stands for
    the debiased ECE minus the population's, ``[θ̃ + θ̂ − q_hi, θ̃ + θ̂ − q_lo]``.
    Columns: encoder, dataset, value (the plug-in ECE, as reported), debiased, ci_low (not
    below 0), ci_high.
    """
    alpha, rows = (1 - level) / 2, []
    ids = replicate_ids(n_replicates)
    for c in cells:
        n_s = len(c.seeds)

        def ece(reps, fn, cell=c, n_s=n_s):
            w = replicate_weights(cell.test, reps, seed)
            vals = per_seed_values(cell.clean, n_s, lambda p: fn(cell.test.y, p, cell.task, w))
            counts = (np.ones((1, n_s)) if reps is None
                      else resample_counts_for(SEED_STREAM, n_s, reps, seed))  # fmt: skip
            return (vals * counts).sum(axis=1) / counts.sum(axis=1)

        chunks = range(0, n_replicates, _CHUNK)
        reps = np.concatenate([ece(ids[i : i + _CHUNK], weighted_debiased_ece) for i in chunks])
        point, plug = ece(None, weighted_debiased_ece)[0], ece(None, weighted_ece)[0]
        # pivot: the resampled debiased ECE estimates the resampled world's ECE, the plug-in
        lo = point + plug - np.nanquantile(reps, 1 - alpha)
        hi = point + plug - np.nanquantile(reps, alpha)
        rows.append((c.encoder, c.dataset, plug, point, max(lo, 0.0), hi))
    return pd.DataFrame(
        rows, columns=["encoder", "dataset", "value", "debiased", "ci_low", "ci_high"]
    )
