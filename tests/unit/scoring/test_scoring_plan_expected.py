"""What each cell must hold comes from the recorded plan, never from what the store holds.

Every test writes a real results store (``simulate_runs`` → edits → ``write_store`` with the
plan :func:`crsbench.runs.plan.recorded_plan` makes of a real config) and reads it back through
``load_runs`` → the scoring code → the leaderboard.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from crsbench.config import parse_config
from crsbench.metrics import robustness_from_drops
from crsbench.protocol import PAPER_CONDITIONS
from crsbench.runs.plan import recorded_plan
from crsbench.scoring import axes_from_runs, seed_means
from crsbench.scoring.planned import NOT_RUN, planned_axes
from crsbench.scoring.seed_axes import NO_ROWS
from crsbench.stats.leaderboard import build_leaderboard
from crsbench.store import load_runs, read_plan
from crsbench.testing import simulate_runs, write_store

pytestmark = pytest.mark.filterwarnings("ignore:cells not scored:UserWarning")

MODALITIES = {"isic2019": "dermoscopy", "chexpert": "chest_xray", "mimic_cxr": "chest_xray"}


def _plan(tmp_path: Path, encoders: list[str], datasets: tuple[str, ...], seeds: list[int]):
    """The planner's record of a config of ``encoders`` × ``datasets`` (CheXpert → MIMIC)."""
    cfg = parse_config(
        {
            "encoders": encoders,
            "datasets": {n: {"root": f"d/{n}"} for n in (*datasets, "mimic_cxr")},
            "shifts": [{"source": "chexpert", "target": "mimic_cxr"}],
            "seeds": seeds,
            "perturbations": {"include_extra": False},
        },
        base_dir=tmp_path,
    )
    return recorded_plan(cfg, MODALITIES)


def _store(df: pd.DataFrame, tmp_path: Path, plan) -> tuple[pd.DataFrame, Path]:
    store = tmp_path / "store"
    write_store(df, store, plan=plan)
    return load_runs(store), store


def test_the_store_records_the_planners_plan(tmp_path: Path) -> None:
    df = simulate_runs(n_encoders=2, datasets=("chexpert",), seeds=2, rng_seed=0)
    plan = _plan(tmp_path, sorted(df["encoder"].unique()), ("chexpert",), [0, 1])
    _runs, store = _store(df, tmp_path, plan)
    back = read_plan(store)
    assert back == plan
    cell = back.get(str(df["encoder"].iloc[0]), "chexpert")
    assert cell is not None and cell.shift_targets == ("mimic_cxr",)
    assert cell.seeds == (0, 1) and cell.conditions == PAPER_CONDITIONS


def test_chexpert_without_mimic_is_r_nan_with_a_reason_naming_mimic(tmp_path: Path) -> None:
    df = simulate_runs(n_encoders=3, datasets=("chexpert",), seeds=2, rng_seed=0)
    kept = df[df["eval_dataset"] != "mimic_cxr"]  # no cell evaluated the MIMIC shift
    runs, store = _store(kept, tmp_path, _plan(tmp_path, sorted(df["encoder"].unique()),
                                               ("chexpert",), [0, 1]))  # fmt: skip
    per_seed = planned_axes(runs, store)
    assert per_seed["robustness_drop"].isna().all()
    assert per_seed["missing"].str.contains("R: shift shift:mimic_cxr missing").all()
    cells = seed_means(per_seed)
    assert cells["robustness_drop"].isna().all()
    assert cells["missing"].str.contains("mimic_cxr").all()
    board = build_leaderboard(runs, n_replicates=0, store=store)
    assert board["CRS"].isna().all() and board["tier"].isna().all()
    assert board["missing"].str.contains("chexpert: R: shift shift:mimic_cxr missing").all()
    # what the store holds alone would have scored R over the 15 conditions, silently
    blind = axes_from_runs(runs)
    assert blind["robustness_drop"].notna().all() and (blind["missing"] == "").all()


def test_r_with_the_planned_mimic_shift_is_the_max_over_16_drops_by_hand(tmp_path: Path) -> None:
    df = simulate_runs(n_encoders=1, datasets=("chexpert",), seeds=1, rng_seed=0)
    encoder = str(df["encoder"].iloc[0])
    main = (df["probe"] == "logistic") & (df["layer"] == 1.0) & (df["recalibrator"] == "none")
    full = main & (df["fraction"] == 1.0)
    df.loc[full & (df["condition"] == "clean"), "auroc"] = 0.80
    df.loc[full & ~df["condition"].isin(["clean", "shift"]), "auroc"] = 0.78  # drops 0.02
    df.loc[full & (df["condition"] == "shift"), "auroc"] = 0.70  # drop 0.10
    df.loc[df["condition"] == "shift", "details"] = "{}"  # no reference: clean − shift
    runs, store = _store(df, tmp_path, _plan(tmp_path, [encoder], ("chexpert",), [0]))
    row = planned_axes(runs, store).iloc[0]
    drops = {c: 0.02 for c in PAPER_CONDITIONS} | {"mimic_cxr": 0.10}
    assert row["missing"] == ""
    assert row["robustness_drop"] == pytest.approx(robustness_from_drops(drops))
    assert row["n_conditions"] == 16


def test_a_seed_missing_from_every_cell_is_flagged(tmp_path: Path) -> None:
    df = simulate_runs(n_encoders=2, datasets=("isic2019", "chexpert"), seeds=3, rng_seed=2)
    kept = df[df["seed"] != 2]  # the config planned seeds 0, 1, 2; no cell holds seed 2
    encoders = sorted(df["encoder"].unique())
    runs, store = _store(kept, tmp_path, _plan(tmp_path, encoders, ("isic2019", "chexpert"),
                                               [0, 1, 2]))  # fmt: skip
    per_seed = planned_axes(runs, store)
    absent = per_seed[per_seed["seed"] == 2]
    assert len(absent) == 4 and (absent["missing"] == NO_ROWS).all()
    cells = seed_means(per_seed)
    assert cells["auroc"].isna().all() and (cells["n_seeds"] == 2).all()
    assert cells["missing"].str.contains(f"{NO_ROWS} (seed 2)", regex=False).all()
    # what the store holds alone knows of seeds 0 and 1 only: complete-looking cells
    assert seed_means(axes_from_runs(runs))["auroc"].notna().all()


def test_an_encoder_with_an_unrun_cell_gets_no_tier_and_no_probability(tmp_path: Path) -> None:
    df = simulate_runs(n_encoders=4, datasets=("isic2019", "chexpert"), seeds=3, rng_seed=3)
    encoders = sorted(df["encoder"].unique())
    full = build_leaderboard(df, n_replicates=0)
    victim = full.sort_values("rank_crs")["encoder"].iloc[0]  # the leader loses a cell
    kept = df[~((df["encoder"] == victim) & (df["dataset"] == "chexpert"))]
    runs, store = _store(kept, tmp_path, _plan(tmp_path, encoders, ("isic2019", "chexpert"),
                                               [0, 1, 2]))  # fmt: skip
    per_seed = planned_axes(runs, store)
    unrun = per_seed[(per_seed["encoder"] == victim) & (per_seed["dataset"] == "chexpert")]
    assert len(unrun) == 3 and (unrun["missing"] == NOT_RUN).all()
    board = build_leaderboard(runs, n_replicates=300, interval="seed-only", store=store)
    row = board.set_index("encoder").loc[victim]
    assert np.isnan(row["CRS"]) and row["rank_crs"] is pd.NA and pd.isna(row["tier"])
    assert np.isnan(row["p_rank1"]) and np.isnan(row["p_top3"]) and row["interval"] == ""
    assert f"chexpert: {NOT_RUN}" in row["missing"]
    assert any(s.startswith(f"{victim} is incomplete") and NOT_RUN in s
               for s in board.attrs["incomplete"])  # fmt: skip
    others = board[board["encoder"] != victim]
    assert others["tier"].notna().all()
    assert others["p_rank1"].sum() == pytest.approx(1.0)
    # the victim takes no part: the others' probabilities are those of a store without it
    alone, alone_store = _store_without(kept, victim, tmp_path)
    ref = build_leaderboard(alone, n_replicates=300, interval="seed-only", store=alone_store)
    ref = ref.set_index("encoder")
    for col in ("p_rank1", "p_top3", "tier"):
        assert others.set_index("encoder")[col].to_dict() == ref[col].to_dict()
    # without the plan, its partial score would rank first and take a tier
    blind = build_leaderboard(runs, n_replicates=300, interval="seed-only")
    assert blind.set_index("encoder").loc[victim, "tier"] == 1


def _store_without(df: pd.DataFrame, encoder: str, tmp_path: Path) -> tuple[pd.DataFrame, Path]:
    rest = df[df["encoder"] != encoder]
    names = sorted(rest["encoder"].unique())
    store = tmp_path / "alone"
    write_store(rest, store, plan=_plan(tmp_path, names, ("isic2019", "chexpert"), [0, 1, 2]))
    return load_runs(store), store
