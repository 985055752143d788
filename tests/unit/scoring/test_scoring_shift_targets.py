"""Several shift targets in the axes: drops like with like, the paper's R, the all-shifts variant.

Every test writes a real results store (``simulate_runs`` → planted values → ``write_store``)
and reads it back through ``load_runs`` → ``axes_from_runs``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from crsbench.metrics import robustness_drop
from crsbench.protocol import PAPER_PERTURBATIONS
from crsbench.scoring import axes_from_runs
from crsbench.store import load_runs
from crsbench.testing import simulate_runs, write_store

CLEAN, PERTURBED, MIMIC = 0.80, 0.79, 0.70
#: NIH provides 10 of the 14 labels here; the source's clean AUROC on those 10 is 0.84.
NIH_REFERENCE, NIH = 0.84, 0.66
TEN = ["No Finding", "Cardiomegaly", "Lung Opacity", "Lung Lesion", "Edema", "Consolidation",
       "Pneumonia", "Atelectasis", "Pneumothorax", "Pleural Effusion"]  # fmt: skip


def _main(df: pd.DataFrame) -> pd.Series:
    return (df["probe"] == "logistic") & (df["layer"] == 1.0) & (df["recalibrator"] == "none")


def _planted(reference: float | None = NIH_REFERENCE) -> pd.DataFrame:
    """CheXpert cells of 2 encoders, 2 seeds: clean 0.80, every paper condition 0.79 (drop
    0.01), MIMIC-CXR 0.70 (drop 0.10), NIH 0.66 with a recorded reference of 0.84 on 10 of 14
    labels (drop 0.18; the all-label rule would say 0.14)."""
    df = simulate_runs(n_encoders=2, datasets=("chexpert",), seeds=2, rng_seed=5)
    full = _main(df) & (df["fraction"] == 1.0)
    df.loc[full & (df["condition"] == "clean"), "auroc"] = CLEAN
    df.loc[full & df["condition"].isin(PAPER_PERTURBATIONS), "auroc"] = PERTURBED
    df.loc[full & (df["condition"] == "shift"), "auroc"] = MIMIC
    nih = df[full & (df["condition"] == "shift")].copy()
    nih["eval_dataset"], nih["auroc"] = "nih_cxr14", NIH
    entry = {"compared": TEN, "not_compared": ["Enlarged Cardiomediastinum", "Fracture",
             "Support Devices", "Pleural Other"], "source_clean_auroc": reference}  # fmt: skip
    nih["details"] = json.dumps({"shift_labels": entry})
    return pd.concat([df, nih], ignore_index=True)


def _axes(df: pd.DataFrame, tmp_path: Path, **kw) -> pd.DataFrame:
    write_store(df, tmp_path / "store")
    return axes_from_runs(load_runs(tmp_path / "store"), **kw)


def test_drop_on_a_label_subset_uses_the_recorded_reference(tmp_path: Path) -> None:
    axes = _axes(_planted(), tmp_path)
    # paper's R: 15 × 0.01 and the MIMIC drop 0.10 (NIH is an extra)
    paper = 0.5 * (15 * 0.01 + 0.10) / 16 + 0.5 * 0.10
    nih_drop = NIH_REFERENCE - NIH  # 0.18, not CLEAN − NIH = 0.14
    every = 0.5 * (15 * 0.01 + 0.10 + nih_drop) / 17 + 0.5 * nih_drop
    assert axes["robustness_drop"].to_numpy() == pytest.approx([paper] * 4, abs=1e-12)
    assert axes["robustness_drop_extra"].to_numpy() == pytest.approx([nih_drop] * 4, abs=1e-12)
    assert axes["robustness_drop_all_shifts"].to_numpy() == pytest.approx([every] * 4, abs=1e-12)
    assert (axes["n_conditions"] == 16).all() and (axes["n_extra_conditions"] == 1).all()
    assert (axes["missing"] == "").all()


def test_mimic_drop_is_unchanged_bit_for_bit(tmp_path: Path) -> None:
    """A target providing every label records no reference: R is exactly the formula on the
    clean AUROC (the paper's number)."""
    df = simulate_runs(n_encoders=3, datasets=("chexpert",), seeds=2, rng_seed=7)
    write_store(df, tmp_path / "store")
    runs = load_runs(tmp_path / "store")
    axes = axes_from_runs(runs)
    m = runs[_main(runs) & (runs["fraction"] == 1.0)]
    for row in axes.itertuples():
        cell = m[(m["encoder"] == row.encoder) & (m["seed"] == row.seed)]
        clean = float(cell.loc[cell["condition"] == "clean", "auroc"].iloc[0])
        pert = cell[~cell["condition"].isin(["clean", "shift"])]
        conds = {f"{c}/{s}": float(a) for c, s, a in
                 zip(pert["condition"], pert["severity"], pert["auroc"], strict=True)}  # fmt: skip
        shift = float(cell.loc[cell["condition"] == "shift", "auroc"].iloc[0])
        assert row.robustness_drop == robustness_drop(clean, conds, shift)  # exact
        assert row.robustness_drop_all_shifts == row.robustness_drop


def test_the_all_shifts_variant_counts_every_target_in_r(tmp_path: Path) -> None:
    default = _axes(_planted(), tmp_path)
    variant = axes_from_runs(load_runs(tmp_path / "store"), robustness="all_shifts")
    assert variant["robustness_drop"].to_numpy() == pytest.approx(
        default["robustness_drop_all_shifts"].to_numpy(), abs=1e-15
    )
    assert (variant["n_conditions"] == 17).all() and (variant["n_extra_conditions"] == 0).all()
    assert variant["robustness_drop_extra"].isna().all()


def test_leaving_a_target_out_removes_it_everywhere(tmp_path: Path) -> None:
    runs_dir = tmp_path
    _axes(_planted(), runs_dir)
    runs = load_runs(runs_dir / "store")
    without_nih = axes_from_runs(runs, include_shift=["mimic_cxr"], robustness="all_shifts")
    without_mimic = axes_from_runs(runs, include_shift=["nih_cxr14"], robustness="all_shifts")
    only_mimic = 0.5 * (15 * 0.01 + 0.10) / 16 + 0.5 * 0.10
    only_nih = 0.5 * (15 * 0.01 + 0.18) / 16 + 0.5 * 0.18
    assert without_nih["robustness_drop"].to_numpy() == pytest.approx([only_mimic] * 4)
    assert without_mimic["robustness_drop"].to_numpy() == pytest.approx([only_nih] * 4)
    assert (without_mimic["n_extra_conditions"] == 0).all()


def test_an_undefined_reference_is_nan_with_a_note(tmp_path: Path) -> None:
    axes = _axes(_planted(reference=None), tmp_path)
    assert np.isfinite(axes["robustness_drop"]).all()  # R (paper's) is unaffected
    assert axes["robustness_drop_extra"].isna().all()
    assert axes["robustness_drop_all_shifts"].isna().all()
    assert (axes["missing"] == "R extra: shift shift:nih_cxr14 source AUROC on the compared "
            "labels NaN").all()  # fmt: skip
