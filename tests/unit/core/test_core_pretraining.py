"""The shipped pretraining catalogue: complete, consistent with the registries, validated."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from crsbench.core.errors import ConfigError
from crsbench.pretraining import (
    LEVELS,
    catalog_from_dict,
    load_pretraining,
    overlap_summary,
)


def test_every_registered_encoder_has_an_entry_and_no_other() -> None:
    from crsbench.encoders import ENCODERS, get_card

    cat = load_pretraining()
    assert set(cat.entries) == set(ENCODERS.names())
    for name in ENCODERS.names():  # the card carries the same entry
        assert get_card(name).pretraining is cat.entries[name] or (
            get_card(name).pretraining == cat.entries[name]
        )
        assert get_card(name).pretraining.family == get_card(name).family


def test_every_named_dataset_is_registered_and_every_source_cited() -> None:
    from crsbench.datasets import DATASETS

    for entry in load_pretraining().entries.values():
        assert set(entry.datasets) <= set(DATASETS.names()), entry.encoder
        assert entry.elsewhere in LEVELS
        assert all(s.reference and s.data for s in entry.sources)


@pytest.mark.parametrize(
    ("encoder", "dataset", "level", "flagged"),
    [
        ("rad_dino", "mimic_cxr", "trained_on", True),
        ("rad_dino", "chexpert", "trained_on", True),
        ("rad_dino", "vindr_cxr", "none_known", False),
        ("biovil", "mimic_cxr", "trained_on", True),
        ("chexzero", "mimic_cxr", "trained_on", True),
        ("chexzero", "chexpert", "unknown", False),
        ("medgemma", "mimic_cxr", "possible", True),
        ("medsiglip", "mimic_cxr", "possible", True),
        ("medgemma", "isic2019", "unknown", False),
        ("panderm", "isic2019", "possible", True),
        ("retfound", "aptos2019", "unknown", False),
        ("mae", "chexpert", "none_known", False),
        ("clip", "isic2019", "unknown", False),
        ("not_an_encoder", "isic2019", "unknown", False),
    ],
)
def test_known_facts(encoder: str, dataset: str, level: str, flagged: bool) -> None:
    ov = load_pretraining().overlap(encoder, dataset)
    assert (ov.level, ov.flagged) == (level, flagged)
    assert ov.why


def test_overlap_summary_names_only_flagged_datasets() -> None:
    got = overlap_summary("rad_dino", ["aptos2019", "chexpert", "mimic_cxr"])
    assert got == "chexpert (trained on); mimic_cxr (trained on)"
    assert overlap_summary("mae", ["chexpert"]) == ""


def _doc() -> dict:
    return {"version": "t1", "encoders": {"a": {
        "family": "A", "sources": [{"data": "x", "reference": "y"}],
        "datasets": {"chexpert": {"level": "possible", "why": "z"}}, "elsewhere": "unknown"}}}  # fmt: skip


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["encoders"]["a"].update(elsewhere="maybe"), "encoders.a.elsewhere"),
        (lambda d: d["encoders"]["a"]["datasets"]["chexpert"].update(level="yes"),
         "encoders.a.datasets.chexpert.level"),
        (lambda d: d["encoders"]["a"].update(sources=[]), "encoders.a.sources"),
        (lambda d: d["encoders"]["a"]["sources"][0].pop("reference"), "encoders.a.sources[0]"),
        (lambda d: d["encoders"]["a"].update(colour="red"), "unknown key(s) ['colour']"),
    ],
)  # fmt: skip
def test_validation_names_the_key(edit, message: str) -> None:
    doc = _doc()
    catalog_from_dict(doc, "t.yaml")  # valid as written
    edit(doc)
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("(", r"\(")
                       .replace(")", r"\)")):  # fmt: skip
        catalog_from_dict(doc, "t.yaml")


def test_loads_a_user_file_and_rejects_a_missing_one(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(_doc()), encoding="utf-8")
    cat = load_pretraining(path)
    assert cat.version == "t1" and cat.overlap("a", "chexpert").level == "possible"
    with pytest.raises(ConfigError, match="v9"):
        load_pretraining("v9")
