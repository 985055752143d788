"""What the verdict page of a cohort profile says, computed once from the profile's store and
kept in ``STORE/computed/`` (:func:`crsbench.stats.compute.stored_verdict`); the page
(:mod:`crsbench.report.verdict`) reads it back as
:class:`crsbench.report.verdict_data.VerdictData`.

Read-only: the runs table (:func:`crsbench.store.load_runs`), its per-sample predictions and
``cohort.json``. Per encoder: the four axes and the CRS on the fixed anchors with a 95 %
interval (by default the paired bootstrap over test patients × seeds,
:func:`crsbench.stats.uncertainty.crs_uncertainty`; seed-only, with a note saying why, where
the store has no predictions), the worst of the 15 paper conditions, the best recalibrator on the clean test split; then the
recommendation and, given a benchmark store, the benchmark's numbers for the same encoders.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from crsbench.protocol import FROZEN
from crsbench.stats.analysis_registry import jsonable
from crsbench.store.computed import ComputedTables

#: ECE below this reads "well calibrated" in the sentences (a reading aid, not a protocol value).
WELL_CALIBRATED_ECE = 0.05
#: Bootstrap replicates of the CRS intervals.
N_REPLICATES = 2000
#: Why a seed-only interval is left out with fewer than two seeds.
ONE_SEED_NOTE = (
    "no CRS interval: the seed-only bootstrap needs at least two seeds and this profile has "
    "one (its interval would have zero width)"
)


def ece_size_note(n: int, unit: str = "patients") -> str:
    """What an ECE means on a test set of ``n`` patients (or at most ``n``, counted in
    images): the ECE a perfectly calibrated model would show there
    (:func:`crsbench.stats.ece_bias.calibrated_ece`), and, when that reaches
    :data:`crsbench.stats.ece_bias.READABLE_ECE_FLOOR`, that the test set is too small for
    the ECE to be read."""
    from crsbench.stats.ece_bias import READABLE_ECE_FLOOR, calibrated_ece, ece_readable

    if not n:
        return ""
    floor = calibrated_ece(n)
    size = f"{n:,} test {unit}"
    base = (f"a perfectly calibrated model would show an ECE of about {floor:.3f} on {size} "
            "(the binned ECE's upward bias at this size; binary, prevalence 0.3), so an ECE "
            f"below about {floor:.3f}, or a difference in ECE of that size, cannot be told "
            "from calibration noise")  # fmt: skip
    if ece_readable(n):
        return f"ECE at this size: {base}."
    return (f"The test set is too small for the ECE to be read: {base}; that is at least "
            f"{READABLE_ECE_FLOOR:g}, the line this page draws for 'well calibrated'.")  # fmt: skip


def r_shift_note(runs: pd.DataFrame) -> str:
    """That R has no shift term when the cohort's runs evaluate no shift target (``""``
    otherwise)."""
    if "condition" in runs and (runs["condition"] == "shift").any():
        return ""
    return ("R on this cohort has no shift term: it is the protocol's drop over the 15 "
            "perturbation conditions only (the cohort has no second site to shift to), while "
            "a benchmark's R for a dataset with a planned shift (CheXpert → MIMIC-CXR) also "
            "counts that shift's drop. Compare R, and so the CRS, with a benchmark's with that "
            "in mind: the cohort's is not lowered by a site change.")  # fmt: skip


def _test_size(cohort: dict[str, Any], n_patients: dict[str, int], datasets) -> tuple[int, str]:
    """Test patients of the cohort's dataset (the bootstrap counted them), else its test
    images from ``cohort.json`` (patients are at most that many)."""
    counted = [n_patients[d] for d in datasets if d in n_patients]
    if counted:
        return min(counted), "patients"
    images = int(cohort.get("split_sizes", {}).get("test", 0) or 0)
    if cohort.get("group_column"):
        return images, "images (fewer patients)"
    return images, "patients"


def _worst_condition(runs: pd.DataFrame) -> pd.DataFrame:
    """Per encoder: the paper condition with the largest seed-mean AUROC drop."""
    from crsbench.stats.calibration_effects import _perturbation_cells

    cells = _perturbation_cells(runs, FROZEN)
    cells = cells[cells["kind"] == "paper"]
    if cells.empty:
        return pd.DataFrame(columns=["encoder", "condition", "severity", "auroc_drop"])
    idx = cells.groupby("encoder")["auroc_drop"].idxmax().dropna()
    return cells.loc[idx, ["encoder", "condition", "severity", "auroc_drop"]]


def recal_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per encoder and recalibrator: seed-mean ECE and AUROC on the clean test split."""
    from crsbench.store.reader import select_runs

    rows = select_runs(runs, recalibrator=None)
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


def _board(
    runs: pd.DataFrame, store_dir: Path, anchors: Any
) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """The encoders' axes and CRS on the fixed anchors, the per-seed axes of the encoders that
    can be ranked (what each cell must hold: the store's plan), and the warnings."""
    from crsbench.scoring import aggregate_by_encoder, score_cells
    from crsbench.scoring.planned import planned_axes, ranked_per_seed

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        per_seed = planned_axes(runs, store_dir)
        cells = score_cells(per_seed, anchors)
        board = aggregate_by_encoder(cells)
    return board, ranked_per_seed(per_seed, cells), [str(w.message) for w in caught]


def _add_intervals(board: pd.DataFrame, per_seed: pd.DataFrame, store_dir: Path,
                   interval: str, anchors: Any) -> tuple[str, str, dict[str, int]]:  # fmt: skip
    """Fill ``crs_ci_low``/``crs_ci_high``/``crs_corrected``/``interval`` of ``board`` in place
    with the method ``interval`` names; return (method, note on a fallback or a missing
    interval, test patients per dataset)."""
    from crsbench.stats.patient_bootstrap import SEED_ONLY
    from crsbench.stats.uncertainty import check_interval, crs_uncertainty

    check_interval(interval)
    board["crs_ci_low"] = board["crs_ci_high"] = board["crs_corrected"] = np.nan
    board["interval"] = ""
    if not board["CRS"].notna().any():
        return "", "", {}
    unc = crs_uncertainty(per_seed, anchors, store=store_dir, interval=interval,
                          n_replicates=N_REPLICATES, seed=0)  # fmt: skip
    if unc.method == SEED_ONLY and per_seed["seed"].nunique() < 2:
        return "", "; ".join(x for x in (unc.note, ONE_SEED_NOTE) if x), {}
    ci = unc.result.ranks.set_index("encoder")
    for col in ("crs_ci_low", "crs_ci_high", "crs_corrected"):
        board[col] = board["encoder"].map(ci[col]) if col in ci else np.nan
    board["interval"] = np.where(board["crs_ci_low"].notna(), unc.method, "")
    return unc.method, unc.note, dict(unc.n_patients)


def _compare(board: pd.DataFrame, store: Path) -> pd.DataFrame:
    from crsbench.scoring import aggregate_by_encoder, score_runs
    from crsbench.store import load_runs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        bench = aggregate_by_encoder(score_runs(load_runs(store), plan=store))
    cols = ["encoder", "CRS", "auroc", "ece", "retention", "robustness_drop"]
    mine = board[cols].add_prefix("cohort_").rename(columns={"cohort_encoder": "encoder"})
    theirs = bench[cols].add_prefix("benchmark_").rename(columns={"benchmark_encoder": "encoder"})
    return mine.merge(theirs, on="encoder", how="left")


def compute_verdict(store_dir: Path, compare: Path | None = None,
                    interval: str = "test-patients") -> ComputedTables:  # fmt: skip
    """Everything the verdict page shows (see the module): the tables ``board``, ``recal``
    (and ``compare``) and the rest in the summary (the fields of
    :class:`crsbench.report.verdict_data.VerdictData`).

    Parameters
    ----------
    store_dir : Path
        The profile's output directory.
    compare : Path, optional
        A benchmark store whose numbers for the same encoders go beside the cohort's.
    interval : {"test-patients", "seed-only"}
        The bootstrap of the CRS intervals (:func:`crsbench.stats.uncertainty.crs_uncertainty`).
    """
    from crsbench.scoring.anchors import anchors_for_runs
    from crsbench.store import load_runs

    runs = load_runs(store_dir)
    cohort = read_cohort(store_dir)
    anchors = anchors_for_runs(None, runs)  # the version the cohort's runs recorded
    board, per_seed, notes = _board(runs, Path(store_dir), anchors)
    method, note, n_patients = _add_intervals(board, per_seed, Path(store_dir), interval, anchors)
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
    recal_method = best_recalibrator(recal, best)[0] if best else "none"
    revisions = {str(k): ", ".join(sorted(set(v))) for k, v
                 in runs.groupby("dataset")["dataset_revision"]}  # fmt: skip
    n_test, unit = _test_size(cohort, n_patients, sorted(runs["dataset"].unique()))
    tables = {"board": board, "recal": recal}
    if compare is not None:
        tables["compare"] = _compare(board, compare)
    summary = {"cohort": cohort, "sentences": sentences, "recommended": best,
               "recommended_recal": recal_method, "why": why, "notes": notes,
               "interval": method, "interval_note": note, "n_patients": n_patients,
               "revisions": revisions, "ece_note": ece_size_note(n_test, unit),
               "r_note": r_shift_note(runs), "n_replicates": N_REPLICATES}  # fmt: skip
    return ComputedTables(tables, jsonable(summary))  # type: ignore[arg-type]


def read_cohort(store_dir: str | Path) -> dict[str, Any]:
    """The profile's ``cohort.json`` (``{}`` when there is none)."""
    cohort_file = Path(store_dir) / "cohort.json"
    return json.loads(cohort_file.read_text(encoding="utf-8")) if cohort_file.is_file() else {}
