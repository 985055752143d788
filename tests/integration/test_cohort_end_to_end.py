"""profile → verdict → export → predict on a synthetic folder + CSV cohort, through the CLI.

``predict`` on the profile's test images gives the probabilities the profile evaluated: equal
to the refit's test probabilities (tolerance 1e-12; measured 0.0 on CPU) and scoring to the
very metrics stored for that run.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.cohort.refit import refit_cell
from crsbench.evaluation.cell_scoring import score
from crsbench.store import load_runs
from crsbench.testing.cohort import write_cohort

PROBA_TOLERANCE = 1e-12


@pytest.mark.slow
def test_profile_verdict_export_predict(tmp_path: Path) -> None:
    csv, images = write_cohort(
        tmp_path / "data", 300, classes=("benign", "malignant"), images_per_patient=2
    )
    out, model = tmp_path / "profile", tmp_path / "model"
    cli = CliRunner()
    r = cli.invoke(
        app,
        [
            "profile",
            "--data",
            str(csv),
            "--images",
            str(images),
            "--label-columns",
            "diagnosis",
            "--group-column",
            "patient",
            "--encoders",
            "pixel,random_cnn",
            "--out",
            str(out),
            "--device",
            "cpu",
        ],
    )
    assert r.exit_code == 0, r.output
    assert "seeds [0, 1, 2]" in r.output  # scaled down for a small cohort, with the reason
    cohort = json.loads((out / "cohort.json").read_text())
    assert cohort["n_images"] == len(pd.read_csv(csv)) and cohort["n_patients"] == 300
    assert cohort["metadata_columns"] == ["age"]

    page = (out / "verdict.html").read_text()
    assert "Recommended:" in page and "pixel" in page and "random_cnn" in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)  # no network reference
    runs = load_runs(out)
    assert set(runs["fraction"]) == {0.01, 0.05, 0.1, 0.25, 1.0}

    r = cli.invoke(
        app,
        [
            "export",
            "--store",
            str(out),
            "--encoder",
            "pixel",
            "--recalibrator",
            "temperature",
            "--out",
            str(model),
        ],
    )
    assert r.exit_code == 0, r.output
    refit = refit_cell(out, "pixel", "temperature")
    test_csv = tmp_path / "test.csv"
    pd.DataFrame({"path": refit.test_paths}).to_csv(test_csv, index=False)
    pred_csv = tmp_path / "pred.csv"
    r = cli.invoke(
        app, ["predict", "--model", str(model), "--images", str(test_csv), "--out", str(pred_csv)]
    )
    assert r.exit_code == 0, r.output
    pred = pd.read_csv(pred_csv)
    proba = pred[["p_benign", "p_malignant"]].to_numpy()
    assert list(pred["path"]) == [str(p) for p in refit.test_paths]
    assert np.abs(proba - refit.test_proba).max() <= PROBA_TOLERANCE
    stored = runs[
        (runs["encoder"] == "pixel")
        & (runs["recalibrator"] == "temperature")
        & (runs["seed"] == 0)
        & (runs["condition"] == "clean")
    ].iloc[0]
    y = np.array(
        [
            {"benign": 0, "malignant": 1}[v]
            for v in pd.read_csv(csv)
            .set_index("path")
            .loc[[Path(p).name for p in refit.test_paths], "diagnosis"]
        ]
    )
    got = score(y, proba, "multiclass")
    for m in ("auroc", "ece", "brier", "nll"):
        assert abs(got[m] - stored[m]) <= 1e-9, m
