"""``crsbench encoders list`` / ``show``."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.encoders import ENCODERS

runner = CliRunner()


def test_list_json_has_every_entry_and_availability(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("CRSBENCH_WEIGHTS_DIR", str(tmp_path))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    (tmp_path / "chexzero").mkdir()
    (tmp_path / "chexzero" / "best_64_5e-05_original_22000_0.864.pt").write_bytes(b"x")
    result = runner.invoke(app, ["encoders", "list", "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.output)}
    assert set(rows) == set(ENCODERS.names())
    assert rows["efficientnet_lite0_imagenet"]["weights_available"] is True
    assert rows["pixel"]["weights_available"] is True
    assert rows["chexzero"]["weights_available"] is True
    assert rows["panderm"]["weights_available"] is False
    assert rows["vit_b16"]["embed_dim"] == 768 and rows["panderm"]["domain"] == "dermoscopy"


def test_list_table_and_group_filter() -> None:
    result = runner.invoke(app, ["encoders", "list", "--group", "specialist"])
    assert result.exit_code == 0
    for name in ("panderm", "retfound", "rad_dino", "biovil", "chexzero"):
        assert name in result.output
    assert "siglip" not in result.output
    bad = runner.invoke(app, ["encoders", "list", "--group", "nope"])
    assert bad.exit_code == 2


def test_show_unknown_suggests() -> None:
    result = runner.invoke(app, ["encoders", "show", "panderm"])
    assert result.exit_code == 0 and '"embed_dim": 1024' in result.output
    bad = runner.invoke(app, ["encoders", "show", "pandrem"])
    assert bad.exit_code == 2
