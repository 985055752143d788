"""`crsbench estimate`: image counts worked by hand, exact projections, errors, strict JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.config import parse_config
from crsbench.encoders import get_card
from crsbench.resources import resource_path
from crsbench.runs.estimate import documented_speeds, project
from crsbench.runs.estimate_counts import all_dataset_rows, cell_images, lora_images
from crsbench.runs.estimate_data import documented_img_per_s, load_throughput_table
from crsbench.runs.estimate_probe import cell_probe_units
from crsbench.runs.plan import plan_cells

MODALITIES = {"isic2019": "dermoscopy", "chexpert": "chest_xray", "mimic_cxr": "chest_xray"}
PAPER = resource_path("configs", "paper.yaml")


def _cfg(tmp_path: Path, **lora: object):
    """Roots that do not exist: every count comes from the release sizes, capped."""
    return parse_config(
        {
            "encoders": ["resnet50", "vit_b16"],
            "datasets": {
                "isic2019": {"root": "nowhere/isic", "max_images": 1000},
                "chexpert": {"root": "nowhere/chex", "max_images": 500},
                "mimic_cxr": {"root": "nowhere/mimic", "max_images": 100},
            },  # fmt: skip
            "shifts": [{"source": "chexpert", "target": "mimic_cxr"}],
            "seeds": [0, 1],
            "fractions": [0.1, 1.0],
            "layers": [0.5, 1.0],
            "perturbations": {"names": ["jpeg"], "severities": [1, 3], "include_extra": False},
            "regimes": {"lora": {"enabled": bool(lora), **lora}},
            "output_dir": str(tmp_path / "out"),
        },
        base_dir=tmp_path,
    )


def _cells(cfg):
    return {(p.encoder, p.dataset): p for p in plan_cells(cfg, MODALITIES)}


def test_image_counts_worked_by_hand(tmp_path):
    cfg = _cfg(tmp_path)
    rows = all_dataset_rows(cfg)
    # isic: 1000 capped rows at 60/10/10/20 %: train 600, val 100, test 200
    isic = rows["isic2019"]
    assert (isic.n_images, isic.n_train, isic.n_val, isic.n_test) == (1000, 600, 100, 200)
    assert "dataset_sizes/v1.yaml" in isic.source and "not on disk" in isic.source
    # mimic: official test 5,159 images, capped to 100
    assert rows["mimic_cxr"].n_eval == 100
    cells = _cells(cfg)
    # isic cell: every row once (all layers in one pass) + test 200 x 2 conditions, no shift
    got = cell_images(cells[("resnet50", "isic2019")], rows)
    assert (got.clean, got.perturbed, got.shift, got.total) == (1000, 400, 0, 1400)
    # chexpert cell: 500 + test 100 x 2 conditions + 100 mimic evaluation rows
    got = cell_images(cells[("vit_b16", "chexpert")], rows)
    assert (got.clean, got.perturbed, got.shift, got.total) == (500, 200, 100, 800)


def test_lora_images_worked_by_hand(tmp_path):
    cfg = _cfg(tmp_path, epochs=2, lr_factors=[1.0, 3.0], seeds=[0], fractions=[0.1, 1.0])
    rows = all_dataset_rows(cfg)
    li = lora_images(cfg, _cells(cfg)[("resnet50", "isic2019")], rows)
    # train: 2 epochs x 600 rows x (0.1 + 1.0) x 1 seed x 2 rates = 2640
    assert li.train == 2640
    # forward: val 2 epochs x 100 x 2 fractions x 2 rates = 800; scoring 1 seed x
    # (test 200 x 2 fractions + 200 x 2 conditions) = 800
    assert li.forward == 1600


def test_probe_units_worked_by_hand(tmp_path):
    cfg = _cfg(tmp_path)
    rows = all_dataset_rows(cfg)
    units = cell_probe_units(cfg, _cells(cfg)[("resnet50", "isic2019")], rows, d=10, k=8)
    m = len(cfg.probes.logistic.c_grid)
    # subsets: 2 seeds x 0.1 x 600 rows, the full fraction once, the 0.5 layer once
    assert units.logistic == pytest.approx(10 * 8 * m * 600 * (2 * 0.1 + 1 + 1))
    h, epochs = cfg.probes.mlp.hidden_size, cfg.probes.mlp.epochs
    assert units.mlp == pytest.approx(2 * 1.1 * 600 * epochs * (10 * h + h * 8))
    # kNN queries: 0.1 x 200 test rows; at 1.0: 200 + 200 x 2 conditions
    assert units.knn == pytest.approx(2 * (0.1 * 200 + 600) * 600 * 10)


def test_documented_speed_scales_with_tokens():
    table = load_throughput_table()
    assert documented_img_per_s(table, "vit_b16", 224) == 17000
    # RAD-DINO: ViT-B/14 at 518 px, 37^2 = 1369 tokens vs 14^2 = 196 at the reference
    ref, n = 196 * (6 * 768 + 196), 1369 * (6 * 768 + 1369)
    assert documented_img_per_s(table, "rad_dino", 518) == pytest.approx(17000 * ref / n)
    # a CNN scales with pixels
    assert documented_img_per_s(table, "biovil", 448) == pytest.approx(35000 / 4)


def test_every_paper_encoder_has_a_documented_figure(tmp_path):
    cfg = parse_config(json.loads(json.dumps({"encoders": list(load_throughput_table()
                       .encoder_arch), "datasets": {"isic2019": {"root": "x"}}})),
                       base_dir=tmp_path)  # fmt: skip
    speeds = documented_speeds(cfg)
    assert {s.encoder for s in speeds} == {e.name for e in cfg.encoders}
    assert all(s.img_per_s > 0 and s.input_size == get_card(s.encoder).input_size for s in speeds)


def _run(*args: str):
    return CliRunner().invoke(app, ["estimate", *map(str, args)])


def _strict(text: str):
    def refuse(token: str):
        raise ValueError(f"not strict JSON: {token}")

    return json.loads(text, parse_constant=refuse)


def _no_measuring(monkeypatch):
    def boom(*_a, **_k):
        raise AssertionError("measured although every figure was given")

    monkeypatch.setattr("crsbench.runs.estimate.measured_speeds", boom)
    monkeypatch.setattr("crsbench.runs.estimate_probe.measure_probe_rates", boom)


def test_throughput_projection_is_exact(tmp_path, monkeypatch):
    _no_measuring(monkeypatch)
    cfg_file = tmp_path / "c.yaml"
    cfg = _cfg(tmp_path)
    cfg_file.write_text(json.dumps(cfg.model_dump(mode="json")))
    res = _run(cfg_file, "--throughput", "resnet50=100", "--throughput", "vit_b16=250", "--json")
    assert res.exit_code == 0, res.output
    out = _strict(res.stdout)
    speed = {"resnet50": 100.0, "vit_b16": 250.0}
    for cell in out["cells"]:
        assert cell["extract_h"] == pytest.approx(cell["images"] / speed[cell["encoder"]] / 3600)
    chex = next(c for c in out["cells"] if c["dataset"] == "chexpert")
    assert chex["images"] == 800
    assert out["totals"]["extract_h"] == pytest.approx(sum(c["extract_h"] for c in out["cells"]))
    assert {s["source"] for s in out["speeds"]} == {"given"}
    assert out["paper_node"]["gpus"] == 8


def test_paper_config_with_every_throughput_runs_without_measuring(monkeypatch):
    _no_measuring(monkeypatch)
    names = list(load_throughput_table().encoder_arch)
    args = [a for n in names for a in ("--throughput", f"{n}=1000")]
    res = _run(PAPER, *args, "--json")
    assert res.exit_code == 0, res.output
    out = _strict(res.stdout)
    assert len(out["cells"]) == 43
    assert out["probe_rates"]["source"].startswith("documented")
    assert out["paper_node"]["wall_h"] > 0
    text = _run(PAPER, *args)
    assert text.exit_code == 0
    lines = text.stdout.splitlines()
    assert lines[0].split("\t")[:3] == ["encoder", "dataset", "images"]
    assert any(line.startswith("paper grid at the documented figures:") for line in lines)


def test_lora_hours_use_the_training_cost_ratio(tmp_path, monkeypatch):
    _no_measuring(monkeypatch)
    cfg = _cfg(tmp_path, epochs=2, lr_factors=[1.0, 3.0], seeds=[0], fractions=[0.1, 1.0])
    speeds = documented_speeds(cfg)
    proj = project(cfg, speeds, load_throughput_table().probe_rates)
    cell = next(c for c in proj.cells if (c.encoder, c.dataset) == ("resnet50", "isic2019"))
    ratio = load_throughput_table().training_cost_ratio
    assert cell.lora_h == pytest.approx((2640 * ratio + 1600) / 35000 / 3600)


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        ("resnt50=10", "Did you mean 'resnet50'?"),
        ("resnet50=0", "--throughput resnet50: img/s must be a positive number. Got '0'"),
        ("resnet50=-3", "resnet50: img/s must be a positive number"),
        ("resnet50=fast", "resnet50: img/s must be a positive number. Got 'fast'"),
        ("resnet50", "must be ENCODER=IMG_PER_S"),
    ],
)
def test_bad_throughput_is_refused_naming_the_encoder(tmp_path, monkeypatch, arg, message):
    _no_measuring(monkeypatch)
    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text(json.dumps(_cfg(tmp_path).model_dump(mode="json")))
    res = CliRunner().invoke(app, ["estimate", str(cfg_file), "--throughput", arg])
    assert res.exit_code == 2
    assert message in " ".join(res.output.split())


@pytest.mark.slow
def test_measured_path_times_encoders_and_probes_here(tmp_path):
    cfg = parse_config(
        {"encoders": ["random_cnn"], "datasets": {"isic2019": {"root": "nowhere", "max_images": 50}},
         "output_dir": str(tmp_path / "out")},
        base_dir=tmp_path,
    )  # fmt: skip
    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text(json.dumps(cfg.model_dump(mode="json")))
    res = _run(cfg_file, "--json", "--images", "2")
    assert res.exit_code == 0, res.output
    out = _strict(res.stdout)
    assert [s["source"] for s in out["speeds"]] == ["measured"]
    assert out["probe_rates"]["source"] == "measured on this machine"
    assert out["probe_scaling_check"]["rows"] == [1000, 2000]
    cell = out["cells"][0]
    assert cell["extract_h"] == pytest.approx(
        cell["images"] / cell["img_per_s"] / 3600, rel=1e-2
    )  # img/s rounded to 0.01
