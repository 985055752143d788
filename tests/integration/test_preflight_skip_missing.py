"""``crsbench run`` says up front what it lacks: preflight, ``doctor``, ``--skip-missing``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.config import load_config
from crsbench.config.loading import packaged_config_path
from crsbench.encoders import PAPER_FAMILIES
from crsbench.runs.plan import recorded_plan
from crsbench.runs.preflight import preflight
from crsbench.store import read_plan

from .runner_fixtures import MORE_SHIFT_TARGETS, tiny_config_dict, write_tiny_data

runner = CliRunner()
PAPER = packaged_config_path("paper")


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return write_tiny_data(tmp_path_factory.mktemp("preflight") / "data", MORE_SHIFT_TARGETS)


@pytest.fixture()
def no_weights(monkeypatch, tmp_path):
    """An empty weights folder and an empty HF cache: only the offline encoders have weights."""
    monkeypatch.setenv("CRSBENCH_WEIGHTS_DIR", str(tmp_path / "weights"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _three_encoder_config(data: Path, out: Path, folder: Path) -> Path:
    cfg = tiny_config_dict(data, out, encoders=("pixel", "random_cnn", "chexzero"))
    cfg["datasets"] = {"isic2019": cfg["datasets"]["isic2019"]}
    cfg["shifts"] = []
    cfg["seeds"], cfg["fractions"], cfg["layers"] = [0], [1.0], [1.0]
    cfg["perturbations"]["names"], cfg["perturbations"]["severities"] = ["jpeg"], [1]
    cfg["recalibrators"] = ["temperature"]
    path = folder / "three.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_paper_config_lists_every_family_at_once_offline(data, no_weights, monkeypatch, tmp_path):
    monkeypatch.setenv("CRSBENCH_DATA", str(data))
    cfg = load_config(PAPER, output_dir=tmp_path / "out")
    report = preflight(cfg)
    assert report.missing("encoder") == set(PAPER_FAMILIES) and len(PAPER_FAMILIES) == 15
    assert report.missing("dataset") == set()
    assert any("HF_HUB_OFFLINE" in note for note in report.notes)
    chexzero = next(lack for lack in report.lacks if lack.name == "chexzero")
    assert any("CRSBENCH_WEIGHTS_DIR" in place and "chexzero" in place for place in chexzero.places)


def test_doctor_prints_the_preflight_and_exits_1(data, no_weights, monkeypatch, tmp_path):
    monkeypatch.setenv("CRSBENCH_DATA", str(data))
    result = runner.invoke(app, ["doctor", str(PAPER), "--out", str(tmp_path / "out"), "--json"])
    assert result.exit_code == 1, result.output
    body = json.loads(result.stdout)
    assert {m["name"] for m in body["missing"]} == set(PAPER_FAMILIES)
    text = runner.invoke(app, ["doctor", str(PAPER), "--out", str(tmp_path / "out")]).stdout
    assert "15 missing" in text and text.count("missing encoder") == 15


def test_missing_dataset_root_is_listed_with_the_config_key(no_weights, monkeypatch, tmp_path):
    monkeypatch.setenv("CRSBENCH_DATA", str(tmp_path / "nowhere"))
    report = preflight(load_config(PAPER, output_dir=tmp_path / "out"))
    assert report.missing("dataset") == {"isic2019", "aptos2019", "chexpert", "mimic_cxr",
                                         *MORE_SHIFT_TARGETS}  # fmt: skip
    assert all("datasets." in lack.places[0] for lack in report.lacks if lack.kind == "dataset")


def test_run_refuses_before_any_work_and_names_where_to_put_weights(data, no_weights, tmp_path):
    config = _three_encoder_config(data, tmp_path / "out", tmp_path)
    refused = runner.invoke(app, ["run", str(config)])
    assert refused.exit_code == 2
    assert "missing encoder chexzero" in refused.stderr and "chexzero/" in refused.stderr
    assert "pixel" not in refused.stderr and "random_cnn" not in refused.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_skip_missing_runs_the_rest_and_status_shows_the_skipped_cell(data, no_weights, tmp_path):
    config = _three_encoder_config(data, tmp_path / "out", tmp_path)
    done = runner.invoke(app, ["run", str(config), "--skip-missing"])
    assert done.exit_code == 0, done.output
    assert "skipped 1 cells" in done.stdout and "chexzero × isic2019" in done.stdout
    last = json.loads((tmp_path / "out" / "last_run.json").read_text())
    assert [(c["encoder"], c["dataset"]) for c in last["skipped_cells"]] == [
        ("chexzero", "isic2019")
    ]
    # the store records the planner's plan of the whole config: the skipped cell is planned
    plan = read_plan(tmp_path / "out")
    assert plan == recorded_plan(load_config(config), {"isic2019": "dermoscopy"})
    assert plan.get("chexzero", "isic2019") is not None
    assert plan.get("chexzero", "isic2019").conditions == (("jpeg", 1),)

    status = runner.invoke(app, ["status", str(config), "--json"])
    assert status.exit_code == 0, status.output
    rows = {(r["encoder"], r["dataset"]): r for r in json.loads(status.stdout)["cells"]}
    assert rows[("pixel", "isic2019")]["state"] == "done"
    assert rows[("random_cnn", "isic2019")]["state"] == "done"
    skipped = rows[("chexzero", "isic2019")]
    assert skipped["state"] == "skipped" and skipped["done"] == 0
    assert "chexzero" in skipped["reason"]
