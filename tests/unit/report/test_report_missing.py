"""Stores without some analyses, the optional reliability table, bad inputs and the CLI."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner


def _minimal_store(path: Path) -> Path:
    """Main protocol only: one seed, no recalibration, no layer sweep, no shift rows."""
    from crsbench.testing import simulate_runs, write_store

    df = simulate_runs(n_encoders=3, datasets=("isic2019", "chexpert"), seeds=1)
    keep = (
        (df["probe"] == "logistic")
        & np.isclose(df["layer"], 1.0)
        & (df["recalibrator"] == "none")
        & (df["condition"] != "shift")
    )
    write_store(df[keep].reset_index(drop=True), path)
    return path


@pytest.fixture(scope="module")
def minimal_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The CLI's report of the minimal store (the CLI path is exercised here too)."""
    import crsbench.cli.report_command  # noqa: F401  (registers the command)
    from crsbench.cli.app import app

    store = _minimal_store(tmp_path_factory.mktemp("minimal") / "store")
    out = tmp_path_factory.mktemp("minimal_out")
    res = CliRunner().invoke(app, ["report", "--store", str(store), "--out", str(out),
                                   "--replicates", "20"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "index.html" in res.output
    return out / "index.html"


def test_missing_analyses_say_so(minimal_report: Path) -> None:
    html = minimal_report.read_text(encoding="utf-8")
    sections = dict(re.findall(r'<section id="([^"]+)">(.*?)</section>', html, flags=re.S))
    assert len(sections) == 18
    expect = {
        "uncertainty": "at least two seeds",
        "calibration": "no recalibrated rows",
        "robustness": "institutional-shift rows",
        "layer-depth": "no layer-depth sweep",
        "control-probes": "no control-probe rows",
    }
    for sid, text in expect.items():
        assert '<p class="note">' in sections[sid] and text in sections[sid], sid
    figs = {p.stem for p in (minimal_report.parent / "figures").glob("*.png")}
    assert figs == {"profiles", "rank_shift", "label_efficiency", "robustness", "weights_pareto"}
    # present sections still draw their figure
    assert "<img" in sections["label-efficiency"] and "<img" not in sections["layer-depth"]


def test_cli_missing_store_exits_2(tmp_path: Path) -> None:
    import crsbench.cli.report_command  # noqa: F401
    from crsbench.cli.app import app

    res = CliRunner().invoke(app, ["report", "--store", str(tmp_path), "--out",
                                   str(tmp_path / "o")])  # fmt: skip
    assert res.exit_code == 2
    assert "results.duckdb" in res.output


def test_cli_rejects_bad_cell_and_replicates(tmp_path: Path) -> None:
    import crsbench.cli.report_command  # noqa: F401
    from crsbench.cli.app import app

    runner = CliRunner()
    bad = runner.invoke(app, ["report", "--store", str(tmp_path), "--out", str(tmp_path),
                              "--replicates", "-1"])  # fmt: skip
    assert bad.exit_code == 2 and "--replicates must be >= 0" in bad.output
    bad = runner.invoke(app, ["report", "--store", str(tmp_path), "--out", str(tmp_path),
                              "--calibration-cell", "resnet50"])  # fmt: skip
    assert bad.exit_code == 2 and "ENCODER/DATASET" in bad.output


def _add_reliability(store: Path, frame) -> None:
    import duckdb

    con = duckdb.connect(str(store / "results.duckdb"))
    try:
        con.register("rel_df", frame)
        con.execute("CREATE TABLE reliability AS SELECT * FROM rel_df")
    finally:
        con.close()


def _bins(encoder: str, dataset: str):
    import pandas as pd

    rows = []
    for seed in (0, 1):
        for recal, bend in (("none", 0.7), ("temperature", 0.95)):
            for b in range(10):
                conf = (b + 0.5) / 10
                rows.append({"encoder": encoder, "dataset": dataset, "seed": seed,
                             "recalibrator": recal, "bin": b, "conf": conf,
                             "acc": conf**bend, "count": 20 + b})  # fmt: skip
    return pd.DataFrame(rows)


def test_reliability_table_gives_true_diagrams(small_store: Path, tmp_path: Path) -> None:
    import shutil

    from crsbench.cli.report_command import report_data

    store = tmp_path / "store"
    shutil.copytree(small_store, store)
    _add_reliability(store, _bins("resnet50", "isic2019"))
    data = report_data(store, n_replicates=0, calibration_cell=("resnet50", "isic2019"))
    assert data.calibration_cell == ("resnet50", "isic2019")
    assert data.reliability is not None and len(data.reliability) == 40
    assert "reliability" not in data.missing
    assert "uncertainty" in data.missing  # n_replicates=0

    from crsbench.report.figures_detail import reliability_figure

    fig = reliability_figure(data.reliability, data.calibration_cell, tmp_path / "figs")
    assert fig.png.stat().st_size > 5_000


def test_bad_reliability_table_and_cell_raise(small_store: Path, tmp_path: Path) -> None:
    import shutil

    from crsbench.cli.report_command import report_data
    from crsbench.core.errors import DataError, StoreError

    store = tmp_path / "store"
    shutil.copytree(small_store, store)
    _add_reliability(store, _bins("resnet50", "isic2019").drop(columns=["count"]))
    with pytest.raises(StoreError, match=r"reliability.*must have columns.*count"):
        report_data(store, n_replicates=0)
    with pytest.raises(DataError, match="calibration cell must be"):
        report_data(small_store, n_replicates=0, calibration_cell=("nope", "isic2019"))
