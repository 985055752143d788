"""A cell the config planned but the store lacks leaves its encoder's row incomplete, loudly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from crsbench.scoring.planned import NOT_RUN, planned_cells
from crsbench.stats.leaderboard import build_leaderboard
from crsbench.store import load_runs
from crsbench.testing import simulate_runs, write_store


def _config(encoders: list[str]) -> dict:
    return {
        "encoders": [{"name": e} for e in encoders],
        "datasets": {"isic2019": {}, "chexpert": {}, "mimic_cxr": {}},
        "shifts": [{"source": "chexpert", "target": "mimic_cxr"}],
        "exclude_cells": [{"encoder": encoders[0], "dataset": "isic2019"}],
    }


def test_planned_cells_from_a_config_by_hand() -> None:
    cfg = _config(["a", "b"])
    import json

    assert planned_cells(json.dumps(cfg)) == {
        ("a", "chexpert"),
        ("b", "isic2019"),
        ("b", "chexpert"),
    }
    assert planned_cells("not json") is None


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_an_absent_planned_cell_is_never_a_complete_looking_row(tmp_path: Path) -> None:
    runs = simulate_runs(n_encoders=4, datasets=("isic2019", "chexpert"), seeds=2, rng_seed=3)
    encoders = sorted(runs["encoder"].unique())
    full = build_leaderboard(runs, n_replicates=0)
    victim = full.sort_values("rank_crs")["encoder"].iloc[0]  # the leader loses a cell
    kept = runs[~((runs["encoder"] == victim) & (runs["dataset"] == "chexpert"))]
    cfg = {**_config(encoders), "exclude_cells": []}
    write_store(kept, tmp_path, config=cfg)
    board = build_leaderboard(load_runs(tmp_path), n_replicates=0, store=tmp_path)
    row = board.set_index("encoder").loc[victim]
    assert np.isnan(row["CRS"]) and row["rank_crs"] is __import__("pandas").NA
    assert f"chexpert: {NOT_RUN}" in row["missing"]
    # without the store's config the row would have ranked first on its one remaining cell
    blind = build_leaderboard(load_runs(tmp_path), n_replicates=0)
    assert blind.set_index("encoder").loc[victim, "rank_crs"] == 1
    others = board[board["encoder"] != victim]
    assert others["CRS"].notna().all() and (others["missing"] == "").all()
