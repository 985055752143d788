"""``exclude_cells``: the planners (frozen and LoRA) leave the cells out; `crsbench status` says so."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from crsbench.cli.app import app
from crsbench.config import packaged_config_path, parse_config
from crsbench.datasets.synthetic import write_all
from crsbench.datasets.synthetic.sizes import MINIMUMS
from crsbench.runs.lora_stage import lora_plan
from crsbench.runs.plan import plan_cells
from crsbench.runs.status import grid_summary

MODALITIES = {"isic2019": "dermoscopy", "aptos2019": "fundus", "chexpert": "chest_xray"}
EXCLUDED = [{"encoder": "random_vit", "dataset": "aptos2019"},
            {"encoder": "random_cnn", "dataset": "isic2019"}]  # fmt: skip


def _cfg(tmp_path: Path, exclude: list[dict[str, str]]):
    return parse_config(
        {
            "encoders": ["pixel", "random_cnn", "random_vit"],
            "datasets": {n: {"root": f"d/{n}"} for n in (*MODALITIES, "mimic_cxr")},
            "shifts": [{"source": "chexpert", "target": "mimic_cxr"}],
            "exclude_cells": exclude,
            "seeds": [0, 1],
            "fractions": [0.1, 1.0],
            "perturbations": {"names": ["jpeg"], "severities": [1], "include_extra": False},
            "regimes": {"lora": {"enabled": True, "seeds": [0]}},
        },
        base_dir=tmp_path,
    )


def test_the_frozen_plan_leaves_the_excluded_cells_out(tmp_path: Path) -> None:
    full = plan_cells(_cfg(tmp_path, []), MODALITIES)
    cut = plan_cells(_cfg(tmp_path, EXCLUDED), MODALITIES)
    assert len(full) == 9 and len(cut) == 7
    gone = {("random_vit", "aptos2019"), ("random_cnn", "isic2019")}
    assert {(c.encoder, c.dataset) for c in full} - {(c.encoder, c.dataset) for c in cut} == gone
    # no identity of an excluded cell is planned anywhere (so none can be counted missing)
    planned = {(i.encoder, i.dataset) for c in cut for i in c.identities}
    assert not planned & gone
    # the cells that remain are planned exactly as without the exclusion
    kept = {(c.encoder, c.dataset): c.identities for c in full}
    assert all(kept[(c.encoder, c.dataset)] == c.identities for c in cut)


def test_the_lora_plan_leaves_the_excluded_cells_out(tmp_path: Path) -> None:
    plan = lora_plan(_cfg(tmp_path, EXCLUDED), MODALITIES)
    # pixel has no learnable weights; the two excluded cells are absent
    assert sorted(plan) == [
        ("random_cnn", "aptos2019"), ("random_cnn", "chexpert"),
        ("random_vit", "chexpert"), ("random_vit", "isic2019"),
    ]  # fmt: skip


def test_the_summary_names_the_excluded_cells(tmp_path: Path) -> None:
    assert grid_summary(_cfg(tmp_path, [])) == "9 frozen cells"
    assert grid_summary(_cfg(tmp_path, EXCLUDED)) == (
        "7 frozen cells (2 excluded by config: random_vit×aptos2019, random_cnn×isic2019)"
    )


def test_status_of_the_paper_config_on_synthetic_data_shows_43_cells(tmp_path: Path) -> None:
    """`crsbench synth` data (smallest size), then `crsbench status paper.yaml`."""
    write_all(tmp_path / "data", size=dict(MINIMUMS), seed=0)
    result = CliRunner().invoke(
        app,
        ["status", str(packaged_config_path("paper")), "--out", str(tmp_path / "out")],
        env={"CRSBENCH_DATA": str(tmp_path / "data"), "COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert (
        "43 frozen cells (2 excluded by config: biovil×aptos2019, chexzero×aptos2019)"
        in result.output
    )
    frozen = [ln for ln in result.output.splitlines() if ln.startswith("frozen\t")]
    assert len(frozen) == 43
    assert not any("biovil" in ln and "aptos2019" in ln for ln in frozen)
    assert not any("chexzero" in ln and "aptos2019" in ln for ln in frozen)
