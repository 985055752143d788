"""``regimes.lora.datasets`` and ``encoders[].weights``: validation, plan, hash stability."""

from __future__ import annotations

import pytest

from crsbench.config import config_hash, load_packaged_config
from crsbench.core.errors import ConfigError


def _demo(tmp_path, **lora):
    cfg = load_packaged_config("demo", output_dir=tmp_path)
    data = cfg.model_dump()
    data["regimes"]["lora"].update(lora)
    return type(cfg).model_validate(data)


def test_lora_datasets_restrict_the_lora_plan(tmp_path):
    from crsbench.runs.lora_stage import lora_plan

    cfg = _demo(tmp_path, datasets=["chexpert", "aptos2019"])
    assert cfg.lora_datasets == ["aptos2019", "chexpert"]  # config order
    modalities = {"isic2019": "dermoscopy", "aptos2019": "fundus", "chexpert": "chest_xray"}
    plan = lora_plan(cfg, modalities)
    assert {d for _, d in plan} == {"aptos2019", "chexpert"}
    assert {e for e, _ in plan} == {"efficientnet_lite0_imagenet", "random_vit"}


@pytest.mark.parametrize("bad", [["mimic_cxr"], ["isic"]])
def test_lora_datasets_must_be_probe_datasets(tmp_path, bad):
    with pytest.raises((ConfigError, ValueError), match=r"regimes.lora.datasets must name probe"):
        _demo(tmp_path, datasets=bad)


def test_defaults_of_the_new_keys_keep_the_config_hash(tmp_path):
    cfg = _demo(tmp_path, datasets=None)
    data = cfg.model_dump()
    same = type(cfg).model_validate({**data, "encoders": [
        {k: v for k, v in e.items() if k != "weights"} for e in data["encoders"]]})  # fmt: skip
    assert config_hash(same) == config_hash(cfg)
    data["encoders"][0]["weights"] = "random"
    assert config_hash(type(cfg).model_validate(data)) != config_hash(cfg)
    assert config_hash(_demo(tmp_path, datasets=["aptos2019"])) != config_hash(cfg)
