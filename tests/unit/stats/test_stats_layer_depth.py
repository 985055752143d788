"""The best layer depth is chosen on validation AUROC; its test gain over the last block can
be negative (chosen on test, it would be ≥ 0 by construction)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from crsbench.core.errors import DataError
from crsbench.probes import fit_probe_grid
from crsbench.stats import layer_depth
from crsbench.testing import simulate_runs

#: (seed, depth) → (test AUROC, validation AUROC), by hand: validation prefers depth 0.5
#: (mean 0.89 vs 0.855), the test set prefers 1.0 (0.79 vs 0.83): gain 0.79 − 0.83 = −0.04.
HAND = {(0, 0.5): (0.80, 0.90), (0, 1.0): (0.84, 0.85),
        (1, 0.5): (0.78, 0.88), (1, 1.0): (0.82, 0.86)}  # fmt: skip


def _sweep(record_val: bool = True) -> pd.DataFrame:
    df = simulate_runs(n_encoders=1, datasets=("isic2019",), seeds=2, rng_seed=0)
    keep = (
        (df["probe"] == "logistic") & (df["recalibrator"] == "none") & (df["fraction"] == 1.0)
        & (df["condition"] == "clean") & df["layer"].isin([0.5, 1.0])
    )  # fmt: skip
    out = df[keep].copy()
    for i, (seed, depth) in zip(out.index, zip(out["seed"], out["layer"], strict=True),
                                strict=True):  # fmt: skip
        test, val = HAND[(int(seed), float(depth))]
        out.loc[i, "auroc"] = test
        out.loc[i, "details"] = json.dumps({"val_auroc": val} if record_val else {})
    return out


def test_validation_chooses_the_depth_and_the_test_gain_is_negative_by_hand() -> None:
    row = layer_depth(_sweep()).iloc[0]
    assert row["best_depth"] == 0.5
    assert row["best_val_auroc"] == pytest.approx(0.89)
    assert row["auroc_depth_0.5"] == pytest.approx(0.79)
    assert row["auroc_depth_1"] == pytest.approx(0.83)
    assert row["gain_over_last"] == pytest.approx(-0.04)
    cell = layer_depth(_sweep(), by_cell=True).iloc[0]
    assert cell["dataset"] == "isic2019" and cell["gain_over_last"] == pytest.approx(-0.04)


def test_a_missing_validation_auroc_leaves_the_cell_out_and_none_is_refused() -> None:
    sweep = _sweep()
    first = sweep.index[0]
    sweep.loc[first, "details"] = json.dumps({})  # one seed at one depth lacks it
    assert layer_depth(sweep).empty
    with pytest.raises(DataError, match="validation AUROC"):
        layer_depth(_sweep(record_val=False))  # never falls back to choosing on test


def test_the_fit_records_the_validation_auroc_of_its_chosen_c() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5))
    y = (X[:, 0] + rng.normal(0, 1.0, 300) > 0).astype(int)
    fits = fit_probe_grid(X[:200], y[:200], X[200:], y[200:], "multiclass",
                          [0.001, 1.0, 100.0])  # fmt: skip
    fit = next(iter(fits.values()))
    assert fit.chosen_val_auroc == pytest.approx(float(np.nanmax(fit.val_auroc)))
    assert 0.5 < fit.chosen_val_auroc <= 1.0
