"""``crsbench run --dry-run``: real ViT-B/16 and ResNet-50 at true size, random weights."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
import yaml
from typer.testing import CliRunner

from crsbench.cli import app

from .runner_fixtures import tiny_config_dict, write_tiny_data

runner = CliRunner()


@pytest.mark.slow
def test_dry_run_at_true_size_reports_throughput_and_is_marked(monkeypatch, tmp_path):
    monkeypatch.setenv("CRSBENCH_WEIGHTS_DIR", str(tmp_path / "weights"))  # no weights at all
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    data = write_tiny_data(tmp_path / "data")
    cfg = tiny_config_dict(data, tmp_path / "unused", encoders=("vit_b16", "resnet50"))
    cfg["datasets"] = {"isic2019": cfg["datasets"]["isic2019"]}
    cfg["shifts"] = []
    cfg["seeds"], cfg["fractions"], cfg["layers"] = [0], [1.0], [1.0]
    cfg["perturbations"].update(names=["jpeg"], severities=[1])
    cfg["recalibrators"] = ["temperature"]
    path = tmp_path / "dry.yaml"
    path.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "out"

    res = runner.invoke(app, ["run", str(path), "--dry-run", "--dry-run-images", "16",
                              "--out", str(out), "--no-progress"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "img/s" in res.output and "vit_b16" in res.output and "resnet50" in res.output
    speeds = {r["encoder"]: r for r in
              json.loads((out / "last_run.json").read_text())["dry_run"]["throughput"]}  # fmt: skip
    # true size: ViT-B/16 has 85.8 M parameters without its head, ResNet-50 23.5 M
    assert speeds["vit_b16"]["params_m"] == pytest.approx(85.8, abs=0.1)
    assert speeds["resnet50"]["params_m"] == pytest.approx(23.5, abs=0.1)
    assert speeds["vit_b16"]["input_size"] == speeds["resnet50"]["input_size"] == 224
    assert all(s["img_per_s"] > 0 and s["peak_mem_mb"] > 0 for s in speeds.values())
    print({k: round(v["img_per_s"], 2) for k, v in speeds.items()})

    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as con:
        revisions = {r[0] for r in con.execute("SELECT encoder_revision FROM runs").fetchall()}
    assert revisions and all(r.startswith("random-weights|") for r in revisions)

    refused = runner.invoke(app, ["score", "--store", str(out), "--replicates", "0"])
    assert refused.exit_code != 0 and "is a dry run" in refused.output
    assert "vit_b16" in refused.output and "--dry-run-ok" in refused.output
    report = runner.invoke(app, ["report", "--store", str(out), "--out", str(tmp_path / "r")])
    assert report.exit_code != 0 and "is a dry run" in report.output
    accepted = runner.invoke(app, ["score", "--store", str(out), "--replicates", "0",
                                   "--dry-run-ok"])  # fmt: skip
    assert "is a dry run" not in accepted.output


def test_dry_run_config_keeps_the_real_output_apart(tmp_path):
    from crsbench.config import config_hash, load_packaged_config
    from crsbench.runs.dryrun import dry_run_config

    real = load_packaged_config("paper", output_dir=tmp_path / "paper")
    dry = dry_run_config(real, 32)
    assert all(e.weights == "random" for e in dry.encoders)
    assert all(d.max_images == 32 for d in dry.datasets.values())
    assert dry.output_dir == Path(f"{tmp_path / 'paper'}-dry-run")
    assert dry.regimes.lora.epochs == 1 and len(dry.regimes.lora.seeds) == 1
    assert config_hash(dry) != config_hash(real)
