"""Pretraining-overlap flags and the shift analyses without the flagged results, on a toy store
with planted shift AUROCs (hand-worked means, scipy as the independent reference)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from crsbench.stats.contamination import (
    contamination_flags,
    pretraining_overlap,
    shift_flags,
    shift_validity_without_flagged,
    shift_welch_without_flagged,
)
from crsbench.stats.shift import shift_auroc_by_encoder

#: Planted shift-target AUROC (CheXpert → MIMIC-CXR), the same at every seed.
PLANTED = {"rad_dino": 0.90, "biovil": 0.88, "biomedclip": 0.70, "retfound": 0.74,
           "resnet50": 0.60, "mae": 0.64}  # fmt: skip
GROUPS = {"rad_dino": "medical", "biovil": "medical", "biomedclip": "medical",
          "retfound": "medical", "resnet50": "general", "mae": "general"}  # fmt: skip


def _plant(df: pd.DataFrame, main_mask) -> None:
    shift = main_mask(df, "shift")
    df.loc[shift, "auroc"] = df.loc[shift, "encoder"].map(PLANTED)


@pytest.fixture(scope="module")
def runs(planted_store) -> pd.DataFrame:
    return planted_store(PLANTED, 2, _plant)


def test_cell_flags_follow_the_catalogue() -> None:
    pairs = pd.DataFrame({"encoder": ["rad_dino", "panderm", "resnet50", "clip", "retfound"],
                          "dataset": ["chexpert", "isic2019", "chexpert", "chexpert",
                                      "aptos2019"]})  # fmt: skip
    t = contamination_flags(pairs)
    # retfound × aptos2019: public fundus sets of unnamed origin, so unknown (not flagged)
    assert t["level"].tolist() == ["trained_on", "possible", "none_known", "unknown", "unknown"]
    assert t["flagged"].tolist() == [True, True, False, False, False]
    assert set(t["catalogue_version"]) == {"v1"}


def test_shift_results_flagged_by_source_or_target(runs: pd.DataFrame) -> None:
    t = shift_flags(shift_auroc_by_encoder(runs)).set_index("encoder")
    # rad_dino saw CheXpert (source) and MIMIC (target); biovil only MIMIC; the others neither
    assert t.loc["rad_dino", ["source_level", "target_level"]].tolist() == ["trained_on"] * 2
    assert t.loc["biovil", ["source_level", "target_level"]].tolist() == [
        "none_known", "trained_on"]  # fmt: skip
    assert t["flagged"].to_dict() == {e: e in ("rad_dino", "biovil") for e in PLANTED}
    assert "mimic_cxr trained on" in t.loc["biovil", "why"]


def test_welch_with_and_without_flagged(runs: pd.DataFrame) -> None:
    t = shift_welch_without_flagged(runs, GROUPS).set_index("subset")
    # every encoder: medical (0.90+0.88+0.70+0.74)/4 = 0.805, general (0.60+0.64)/2 = 0.62
    assert t.loc["all", "mean_medical"] == pytest.approx(0.805)
    assert t.loc["all", "mean_general"] == pytest.approx(0.62)
    # without rad_dino and biovil: medical (0.70+0.74)/2 = 0.72
    assert t.loc["without_flagged", "mean_medical"] == pytest.approx(0.72)
    assert t.loc["without_flagged", ["n_medical", "n_general"]].tolist() == [2, 2]
    ref = sps.ttest_ind([0.70, 0.74], [0.60, 0.64], equal_var=False)
    assert t.loc["without_flagged", "t"] == pytest.approx(ref.statistic)
    assert t.loc["without_flagged", "p_value"] == pytest.approx(ref.pvalue)
    assert set(t.loc["without_flagged", "excluded"].split(", ")) == {
        "rad_dino:chexpert→mimic_cxr", "biovil:chexpert→mimic_cxr"}  # fmt: skip


def test_validity_without_flagged_drops_their_shift_results(runs: pd.DataFrame) -> None:
    t = shift_validity_without_flagged(runs)
    src = t[t["predictor"] == "source_auroc"].set_index("subset")
    assert src.loc["all", "n"] == 6 and src.loc["without_flagged", "n"] == 4
    shift = shift_auroc_by_encoder(runs).set_index("encoder")
    kept = ["biomedclip", "retfound", "resnet50", "mae"]
    ref = sps.spearmanr(shift.loc[kept, "source_auroc"], [PLANTED[e] for e in kept])
    assert src.loc["without_flagged", "spearman_rho"] == pytest.approx(ref.statistic)


def test_leaderboard_marker_names_cells_and_shift_targets(runs: pd.DataFrame) -> None:
    from crsbench.stats.leaderboard import build_leaderboard

    board = build_leaderboard(runs, n_replicates=0).set_index("encoder")
    assert board.loc["rad_dino", "pretraining_overlap"] == (
        "chexpert (trained on); shift target mimic_cxr (trained on)")  # fmt: skip
    assert board.loc["biovil", "pretraining_overlap"] == "shift target mimic_cxr (trained on)"
    assert board.loc["mae", "pretraining_overlap"] == ""
    cells = pd.DataFrame({"encoder": ["panderm"], "dataset": ["isic2019"]})
    assert pretraining_overlap(cells) == {"panderm": "isic2019 (possible overlap)"}
    assert np.all(board.index.isin(list(PLANTED)))
