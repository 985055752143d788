"""Planning of the LoRA regime: which encoders, fractions and identities; `crsbench status`."""

from __future__ import annotations

from pathlib import Path

from crsbench.config import parse_config
from crsbench.runs.lora_stage import lora_plan
from crsbench.runs.status import grid_status

MODALITIES = {"isic2019": "dermoscopy", "chexpert": "chest_xray"}


def _cfg(tmp_path: Path, **lora: object):
    return parse_config(
        {
            "encoders": ["pixel", "random_cnn", "random_vit"],
            "datasets": {
                "isic2019": {"root": "d/isic"},
                "chexpert": {"root": "d/chex"},
                "mimic_cxr": {"root": "d/mimic"},
            },  # fmt: skip
            "shifts": [{"source": "chexpert", "target": "mimic_cxr"}],
            "fractions": [0.01, 0.1, 1.0],
            "perturbations": {"names": ["jpeg"], "severities": [1, 3], "include_extra": False},
            "recalibrators": ["temperature", "isotonic"],
            "regimes": {"lora": {"enabled": True, "seeds": [0, 7], **lora}},
            "output_dir": str(tmp_path / "out"),
        },
        base_dir=tmp_path,
    )


def test_untrainable_encoders_are_left_out_and_every_identity_is_lora(tmp_path):
    plan = lora_plan(_cfg(tmp_path), MODALITIES)
    assert sorted(plan) == [(e, d) for e in ("random_cnn", "random_vit")
                            for d in ("chexpert", "isic2019")]  # fmt: skip
    for (enc, ds), by_seed in plan.items():
        assert sorted(by_seed) == [0, 7]
        for seed, ids in by_seed.items():
            assert {i.regime for i in ids} == {"lora"}
            assert {(i.encoder, i.dataset, i.seed) for i in ids} == {(enc, ds, seed)}
            # 3 clean fractions + 2 perturbed + 2 recalibrated (+ shift, shift × 2 recalibrated)
            assert len(ids) == (3 + 2 + 2 + (3 if ds == "chexpert" else 0))


def test_fractions_and_encoders_restrict_the_plan(tmp_path):
    plan = lora_plan(_cfg(tmp_path, fractions=[0.1, 1.0], encoders=["random_vit"]), MODALITIES)
    assert sorted(plan) == [("random_vit", "chexpert"), ("random_vit", "isic2019")]
    ids = plan[("random_vit", "isic2019")][0]
    assert sorted({i.fraction for i in ids}) == [0.1, 1.0]
    assert lora_plan(_cfg(tmp_path, enabled=False), MODALITIES) == {}


def test_status_lists_the_lora_regime_beside_the_frozen_one(tmp_path):
    cfg = _cfg(tmp_path, encoders=["random_vit"])
    _, rows = grid_status(cfg)
    lora_rows = [r for r in rows if r["regime"] == "lora"]
    frozen_rows = [r for r in rows if r["regime"] == "frozen"]
    assert len(frozen_rows) == 6 and len(lora_rows) == 2
    assert all(r["encoder"] == "random_vit" and r["state"] == "todo" for r in lora_rows)


def test_the_recorded_plan_holds_the_lora_cells_beside_the_frozen_ones(tmp_path):
    from crsbench.runs.lora_stage import lora_planned_cells
    from crsbench.runs.pipeline import _recorded_plan

    cfg = _cfg(tmp_path, fractions=[0.1, 1.0], encoders=["random_vit"])
    cells = lora_planned_cells(cfg, MODALITIES)
    assert [(c.encoder, c.dataset, c.regime) for c in cells] == [
        ("random_vit", "chexpert", "lora"), ("random_vit", "isic2019", "lora")]  # fmt: skip
    chex = cells[0]
    assert chex.seeds == (0, 7) and chex.fractions == (0.1, 1.0)
    assert chex.conditions == (("jpeg", 1), ("jpeg", 3)) and chex.shift_targets == ("mimic_cxr",)
    assert cells[1].shift_targets == ()
    plan = _recorded_plan(cfg)  # what the pipeline records: both regimes
    assert plan.of_regime("lora").cells == tuple(cells)
    assert len(plan.of_regime("frozen").cells) == 6  # 3 encoders x 2 probe datasets
    assert plan.get("random_vit", "chexpert").seeds == tuple(cfg.seeds)  # frozen by default
    assert _recorded_plan(_cfg(tmp_path, enabled=False)).of_regime("lora") is None
