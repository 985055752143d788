"""What the verdict page of a cohort profile says, computed from the profile's store.

Read-only: the runs table (:func:`crsbench.scoring.load_runs`) and ``cohort.json``. Per
encoder: the four axes and the CRS on the fixed anchors with a paired-seed bootstrap interval,
the worst of the 15 paper conditions, the best recalibrator on the clean test split; then the
recommendation and, given a benchmark store, the benchmark's numbers for the same encoders.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

#: ECE below this reads "well calibrated" in the sentences (a reading aid, not a protocol value).
WELL_CALIBRATED_ECE = 0.05
#: Paired-seed bootstrap replicates of the CRS intervals.
N_REPLICATES = 2000


@dataclass
class VerdictData:
    """Tables and sentences of the verdict page."""

    board: pd.DataFrame
    recal: pd.DataFrame
    cohort: dict[str, Any]
    sentences: dict[str, str]
    recommended: str | None
    recommended_recal: str
    why: str
    compare: pd.DataFrame | None = None
    notes: list[str] = field(default_factory=list)


def _worst_condition(runs: pd.DataFrame) -> pd.DataFrame:
    """Per encoder: the paper condition with the largest seed-mean AUROC drop."""
    from crsbench.stats.calibration_effects import _perturbation_cells

    cells = _perturbation_cells(runs, "frozen")
    cells = cells[cells["kind"] == "paper"]
    if cells.empty:
        return pd.DataFrame(columns=["encoder", "condition", "severity", "auroc_drop"])
    idx = cells.groupby("encoder")["auroc_drop"].idxmax().dropna()
    return cells.loc[idx, ["encoder", "condition", "severity", "auroc_drop"]]


def recal_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per encoder and recalibrator: seed-mean ECE and AUROC on the clean test split."""
    from crsbench.stats._select import select

    rows = select(runs, recalibrator=None)
    g = rows.groupby(["encoder", "recalibrator"])[["ece", "auroc", "nll"]].mean(skipna=False)
    return g.reset_index()


def best_recalibrator(recal: pd.DataFrame, encoder: str) -> tuple[str, float, float]:
    """(method, ECE before, ECE after) of the defined recalibrator with the lowest ECE;
    ``none`` when no recalibrator lowers the ECE."""
    mine = recal[recal["encoder"] == encoder].set_index("recalibrator")
    before = float(mine["ece"].get("none", np.nan))
    fitted = mine.drop(index="none", errors="ignore")["ece"].dropna()
    if fitted.empty or not fitted.min() < before:
        return "none", before, before
    return str(fitted.idxmin()), before, float(fitted.min())


def _sentence(row: Any, worst: pd.DataFrame, recal: pd.DataFrame) -> str:
    enc = row["encoder"]
    method, before, after = best_recalibrator(recal, enc)
    if not np.isfinite(before):
        cal = "calibration undefined on this cohort"
    elif before < WELL_CALIBRATED_ECE:
        cal = f"well calibrated as fitted (ECE {before:.3f})"
    elif method != "none":
        cal = f"well calibrated after {method} scaling (ECE {before:.3f} → {after:.3f})"
        if method in ("isotonic", "dirichlet"):
            cal = f"better calibrated after {method} recalibration (ECE {before:.3f} → {after:.3f})"
    elif recal[(recal["encoder"] == enc) & (recal["recalibrator"] != "none")]["ece"].isna().all():
        cal = (
            f"miscalibrated (ECE {before:.3f}); recalibration is undefined here (the "
            "calibration split is below the protocol's minimum per class)"
        )
    else:
        cal = f"miscalibrated (ECE {before:.3f}) and no recalibrator lowers it"
    parts = [f"AUROC {row['auroc']:.3f}", cal]
    w = worst[worst["encoder"] == enc]
    if not w.empty and w.iloc[0]["auroc_drop"] <= 0:
        parts.append("loses no AUROC under the 15 paper conditions")
    elif not w.empty:
        r = w.iloc[0]
        parts.append(f"loses {r['auroc_drop']:.2f} AUROC under {r['condition']} severity "
                     f"{int(r['severity'])}")  # fmt: skip
    if np.isfinite(row.get("retention", np.nan)):
        parts.append(f"keeps {row['retention']:.0%} of its AUROC with few labels (retention)")
    return "; ".join(parts) + "."


def _board(runs: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    from crsbench.scoring import aggregate_by_encoder, axes_from_runs, load_anchors, score_cells
    from crsbench.stats import paired_seed_bootstrap

    anchors = load_anchors(None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        per_seed = axes_from_runs(runs)
        board = aggregate_by_encoder(score_cells(per_seed, anchors))
    notes = [str(w.message) for w in caught]
    board["crs_ci_low"] = board["crs_ci_high"] = np.nan
    if per_seed["seed"].nunique() >= 2 and board["CRS"].notna().any():
        boot = paired_seed_bootstrap(per_seed, anchors, n_replicates=N_REPLICATES, seed=0)
        ci = boot.ranks.set_index("encoder")
        board["crs_ci_low"] = board["encoder"].map(ci["crs_ci_low"])
        board["crs_ci_high"] = board["encoder"].map(ci["crs_ci_high"])
    return board, notes


def _compare(board: pd.DataFrame, store: Path) -> pd.DataFrame:
    from crsbench.scoring import aggregate_by_encoder, load_runs, score_runs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        bench = aggregate_by_encoder(score_runs(load_runs(store)))
    cols = ["encoder", "CRS", "auroc", "ece", "retention", "robustness_drop"]
    mine = board[cols].add_prefix("cohort_").rename(columns={"cohort_encoder": "encoder"})
    theirs = bench[cols].add_prefix("benchmark_").rename(columns={"benchmark_encoder": "encoder"})
    return mine.merge(theirs, on="encoder", how="left")


def compute_verdict(store_dir: Path, compare: Path | None = None) -> VerdictData:
    """Everything the verdict page shows (see the module)."""
    from crsbench.scoring import load_runs

    runs = load_runs(store_dir)
    cohort_file = Path(store_dir) / "cohort.json"
    cohort = json.loads(cohort_file.read_text(encoding="utf-8")) if cohort_file.is_file() else {}
    board, notes = _board(runs)
    worst = _worst_condition(runs)
    recal = recal_table(runs)
    board = board.merge(worst.rename(columns={"condition": "worst_condition",
                        "severity": "worst_severity", "auroc_drop": "worst_drop"}),
                        on="encoder", how="left")  # fmt: skip
    sentences = {r["encoder"]: _sentence(r, worst, recal) for _, r in board.iterrows()}
    scored = board[board["CRS"].notna()]
    if not scored.empty:
        best = str(scored.iloc[0]["encoder"])
        why = f"highest CRS on this cohort ({scored.iloc[0]['CRS']:.3f}, fixed anchors)"
    elif board["auroc"].notna().any():
        best = str(board.loc[board["auroc"].idxmax(), "encoder"])
        why = "highest AUROC; no encoder has a CRS on this cohort (see the notes)"
    else:
        best, why = None, "no encoder has a defined AUROC on this cohort"
    method = best_recalibrator(recal, best)[0] if best else "none"
    return VerdictData(board, recal, cohort, sentences, best, method, why,
                       None if compare is None else _compare(board, compare), notes)  # fmt: skip
