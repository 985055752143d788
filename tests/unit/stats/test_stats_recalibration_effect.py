"""recalibration_effect: undefined cells (NaN after) are left out and counted, never averaged
in silently; the identity share comes from the rows' details."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from crsbench.stats import recalibration_effect


def _row(enc, seed, recal, ece, choice=None):
    details = json.dumps({"recal_choice": choice} if choice else {})
    return {
        "encoder": enc, "dataset": "ds", "eval_dataset": "ds", "seed": seed, "regime": "frozen",
        "probe": "logistic", "layer": 1.0, "fraction": 1.0, "condition": "clean", "severity": 0,
        "recalibrator": recal, "ece": ece, "auroc": 0.8, "details": details,
    }  # fmt: skip


def test_undefined_cell_is_counted_not_averaged():
    rows = []
    for seed in (0, 1):
        rows += [_row("a", seed, "none", 0.10), _row("a", seed, "temperature", 0.04, "fitted")]
        rows += [_row("b", seed, "none", 0.20), _row("b", seed, "temperature", 0.20, "identity")]
        rows += [_row("c", seed, "none", 0.30)]
        rows += [_row("c", seed, "temperature", np.nan if seed == 1 else 0.01, "fitted")]
    out = recalibration_effect(pd.DataFrame(rows), n_boot=50).set_index("method")
    r = out.loc["temperature"]
    assert r["n_cells"] == 2 and r["n_cells_undefined"] == 1  # cell c has a NaN seed
    assert r["ece_before"] == pytest.approx(0.15)  # (0.10 + 0.20) / 2, cell c left out
    assert r["ece_after"] == pytest.approx(0.12)
    assert r["mean_abs_reduction"] == pytest.approx(0.03)
    assert r["identity_share"] == pytest.approx(2 / 6)


def test_all_cells_undefined_gives_a_row_with_nan_effect():
    rows = [_row("a", 0, "none", 0.1), _row("a", 0, "dirichlet", np.nan)]
    r = recalibration_effect(pd.DataFrame(rows), n_boot=50).iloc[0]
    assert r["n_cells"] == 0 and r["n_cells_undefined"] == 1
    assert np.isnan(r["mean_abs_reduction"]) and np.isnan(r["identity_share"])
