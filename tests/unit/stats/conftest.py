"""Toy stores with planted values, written through the real store writer."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pytest


def toy_runs(encoders: Sequence[str], seeds: int, datasets=("chexpert",)) -> pd.DataFrame:
    """Simulated rows (the real schema) of the named paper encoders only."""
    from crsbench.testing import simulate_runs

    df = simulate_runs(n_encoders=15, datasets=datasets, seeds=seeds, rng_seed=0)
    return df[df["encoder"].isin(list(encoders))].reset_index(drop=True)


def main_mask(df: pd.DataFrame, condition: str = "clean") -> pd.Series:
    """Frozen, logistic, last layer, full labels, no recalibration, ``condition`` rows."""
    return ((df["regime"] == "frozen") & (df["probe"] == "logistic")
            & np.isclose(df["layer"], 1.0) & np.isclose(df["fraction"], 1.0)
            & (df["recalibrator"] == "none") & (df["condition"] == condition))  # fmt: skip


def write_and_load(df: pd.DataFrame, path: Path) -> pd.DataFrame:
    """Write ``df`` through the real store writer and read the ``runs`` table back."""
    from crsbench.store import load_runs
    from crsbench.testing import write_store

    write_store(df, path)
    return load_runs(path)


@pytest.fixture(scope="module")
def planted_store(tmp_path_factory: pytest.TempPathFactory):
    """``make(encoders, seeds, plant, datasets)``: a toy store's ``runs`` after
    ``plant(df, main_mask)`` edits the simulated rows in place (real writer, read back)."""

    def make(encoders, seeds, plant, datasets=("chexpert",)) -> pd.DataFrame:
        df = toy_runs(encoders, seeds, datasets)
        plant(df, main_mask)
        return write_and_load(df, tmp_path_factory.mktemp("planted") / "store")

    return make
