"""Unreadable images are never dropped silently: `run` and `datasets check` follow one rule.

Issue case: an unreadable validation image below the 1 % threshold was dropped with exit 0,
named nowhere but the cache's ledger, while `datasets check` failed the same data.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import numpy as np
import yaml
from PIL import Image
from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.config import parse_config
from crsbench.runs.prepare import prepare_datasets

N = 200  # budget: 2 images


def _folder(root: Path) -> Path:
    root.mkdir(parents=True)
    rng = np.random.default_rng(0)
    lines = ["path,label"]
    for i in range(N):
        pixels = rng.integers(0, 256, (16, 16), dtype=np.uint8)
        Image.fromarray(pixels).save(root / f"img{i:03d}.png")
        lines.append(f"img{i:03d}.png,{'ab'[i % 2]}")
    (root / "labels.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def test_check_warns_within_the_budget_and_fails_above_it(tmp_path: Path) -> None:
    root = _folder(tmp_path / "data")
    _truncate(root / "img007.png")
    cli = CliRunner()
    result = cli.invoke(app, ["datasets", "check", "folder", "--root", str(root)])
    assert result.exit_code == 0, result.output
    assert "img007.png" in result.output and "within what `crsbench run`" in result.output
    _truncate(root / "img008.png")
    (root / "img009.png").write_bytes(b"not an image")
    result = cli.invoke(app, ["datasets", "check", "folder", "--root", str(root)])
    assert result.exit_code == 1 and "more than `crsbench run` quarantines" in result.output


def test_run_names_and_counts_an_unreadable_validation_image(tmp_path: Path) -> None:
    root = _folder(tmp_path / "data")
    config = {
        "encoders": ["pixel"],
        "datasets": {"folder": {"root": str(root)}},
        "seeds": [0],
        "fractions": [1.0],
        "layers": [1.0],
        "perturbations": {"names": [], "include_extra": False},
        "recalibrators": [],
        "probes": {"logistic": {"c_grid": [1.0], "max_iter": 30}, "mlp": None, "knn": None},
        "output_dir": str(tmp_path / "out"),
        "device": "cpu",
        "num_workers": 0,
    }
    prep = prepare_datasets(parse_config(config, base_dir=tmp_path))["folder"]
    bad = Path(prep.dataset.paths[int(prep.splits.val[0])])
    _truncate(bad)
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    result = CliRunner().invoke(app, ["run", str(tmp_path / "c.yaml"), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert result.output.count("quarantined folder val image") == 1
    assert str(bad) in result.output and "truncated" in result.output
    with duckdb.connect(str(tmp_path / "out" / "results.duckdb"), read_only=True) as con:
        (details,) = con.execute("SELECT details FROM runs").fetchall()[0]
    assert json.loads(details)["n_quarantined"] == {"train": 0, "val": 1, "calib": 0, "test": 0}
    status = CliRunner().invoke(app, ["status", str(tmp_path / "c.yaml")])
    assert "folder: 1 image(s) quarantined (val 1)" in status.output and str(bad) in status.output
