"""Recalibrated rows of a cell: the CV choice is recorded; a too-small calibration split gives
NaN metrics with the reason, which survives the conversion to run records."""

from __future__ import annotations

import numpy as np
import pytest

from crsbench.evaluation.cell import CellData, CellSettings, evaluate_cell
from crsbench.runs.rows import Provenance, to_records
from crsbench.store.records import details_json
from crsbench.store.run_result import RunResult


def _cell(n_calib: int, seed: int = 0) -> CellData:
    """3 well-separated classes in 6-D features; splits 300 train / 60 val / n_calib / 300 test."""
    rng = np.random.default_rng(seed)
    n = 660 + n_calib
    cls = np.arange(n) % 3
    X = rng.normal(size=(n, 6)) + 1.5 * np.eye(3, 6)[cls]
    idx = rng.permutation(n)
    train, val = idx[:300], idx[300:360]
    calib, test = idx[360 : 360 + n_calib], idx[360 + n_calib :]
    return CellData(
        encoder="enc",
        dataset="ds",
        task="multiclass",
        n_outputs=3,
        labels=np.eye(3)[cls],
        train=train,
        val=val,
        calib=calib,
        test=test,
        features={1.0: X},
        perturbed={},
        subsets={(1.0, 0): np.arange(len(train))},
    )


def _settings() -> CellSettings:
    return CellSettings(
        seeds=[0], fractions=[1.0], Cs=[1.0], recalibrators=["temperature", "dirichlet"]
    )


def _recal_rows(cell: CellData) -> list[RunResult]:
    return [r for r in evaluate_cell(cell, _settings()) if r.identity.recalibrator != "none"]


def test_recalibrated_rows_record_the_cv_choice():
    rows = _recal_rows(_cell(n_calib=240))
    assert [r.identity.recalibrator for r in rows] == ["temperature", "dirichlet"]
    for r in rows:
        rec = r.details.recal.recal
        assert r.details.recal.recal_choice in ("fitted", "identity")
        assert rec["choice"] == r.details.recal.recal_choice
        assert rec["protocol"] == "v1" and rec["loss"] == "nll" and rec["seed"] == 0
        assert r.details.recal.n_calib == 240
        assert np.isfinite(r.metrics["ece"])
        # the fallback rule: fitted only if its CV loss beats the identity's
        assert (rec["choice"] == "fitted") == (rec["cv_nll_fitted"] < rec["cv_nll_identity"])
    assert set(rows[1].details.recal.recal["params"]) == {"reg_lambda", "reg_mu"}


def test_too_small_calibration_split_gives_nan_with_reason():
    cell = _cell(n_calib=30)  # 30 calibration rows over 3 classes: some class has < 15
    counts = np.bincount(cell.labels[cell.calib].argmax(1), minlength=3)
    first = int(np.flatnonzero(counts < 15)[0])
    rows = _recal_rows(cell)
    assert len(rows) == 2
    for r in rows:
        assert np.isnan(r.metrics["ece"]) and np.isnan(r.metrics["auroc"])
        reason = r.details.undefined["ece"]
        assert reason == f"calibration split too small: class {first} has n={counts[first]} < 15"
        assert r.details.recal.recal_choice == "undefined"
        assert r.details.score is None  # nothing was scored
    prov = Provenance(
        config_hash="0" * 64,
        encoder_revision="r",
        dataset_revision="r",
        anchors_version="v1",
        package_version="0",
    )
    recs = to_records(rows, prov)
    assert recs[0].metrics["ece"] is None
    assert recs[0].details.undefined["ece"].startswith("calibration split too small")
    assert recs[0].to_row()["details"] == details_json(rows[0].details.as_json())


def test_cv_folds_follow_the_seed_and_are_deterministic():
    cell = _cell(n_calib=240)
    a, b = _recal_rows(cell), _recal_rows(cell)
    assert [r.details for r in a] == [r.details for r in b]
    assert a[0].metrics["ece"] == pytest.approx(b[0].metrics["ece"], abs=0)
