"""The grid keys: ``exclude_cells`` (cells never run) and ``shifts[].rows`` (evaluation rows)."""

from __future__ import annotations

from pathlib import Path

import pytest

from crsbench.config import (
    BenchmarkConfig,
    load_packaged_config,
    parse_config,
)
from crsbench.core.errors import ConfigError
from crsbench.protocol import SHIFT_ROWS

BASE = {
    "encoders": ["pixel", "random_cnn", "random_vit"],
    "datasets": {
        "isic2019": {"root": "data/isic2019"},
        "aptos2019": {"root": "data/aptos2019"},
        "chexpert": {"root": "data/chexpert"},
        "mimic_cxr": {"root": "data/mimic_cxr"},
    },
    "shifts": [{"source": "chexpert", "target": "mimic_cxr"}],
}


def _parse(tmp_path: Path, **changes: object) -> BenchmarkConfig:
    return parse_config({**BASE, **changes}, base_dir=tmp_path, source="cfg.yaml")


def _error(tmp_path: Path, **changes: object) -> str:
    with pytest.raises(ConfigError) as info:
        _parse(tmp_path, **changes)
    return str(info.value)


def _cell(encoder: str, dataset: str) -> dict[str, str]:
    return {"encoder": encoder, "dataset": dataset}


def test_excluded_cells_leave_the_grid_in_config_order(tmp_path: Path) -> None:
    cfg = _parse(
        tmp_path, exclude_cells=[_cell("random_vit", "aptos2019"), _cell("pixel", "isic2019")]
    )
    assert cfg.frozen_cells == [
        ("pixel", "aptos2019"), ("pixel", "chexpert"),
        ("random_cnn", "isic2019"), ("random_cnn", "aptos2019"), ("random_cnn", "chexpert"),
        ("random_vit", "isic2019"), ("random_vit", "chexpert"),
    ]  # fmt: skip
    assert not cfg.includes_cell("pixel", "isic2019") and cfg.includes_cell("pixel", "chexpert")


def test_no_exclusion_by_default(tmp_path: Path) -> None:
    cfg = _parse(tmp_path)
    assert cfg.exclude_cells == [] and len(cfg.frozen_cells) == 9


@pytest.mark.parametrize(
    ("cell", "key", "value", "hint"),
    [
        (_cell("biovil", "aptos2019"), "exclude_cells.0.encoder", "'biovil'", None),
        (_cell("random_vti", "aptos2019"), "exclude_cells.0.encoder", "'random_vti'",
         "Did you mean 'random_vit'?"),
        (_cell("pixel", "aptos"), "exclude_cells.0.dataset", "'aptos'",
         "Did you mean 'aptos2019'?"),
        # a shift target has no cell of its own: probes are never trained on it
        (_cell("pixel", "mimic_cxr"), "exclude_cells.0.dataset", "'mimic_cxr'", None),
    ],
)  # fmt: skip
def test_an_unknown_name_is_refused_naming_key_and_value(
    tmp_path: Path, cell: dict[str, str], key: str, value: str, hint: str | None
) -> None:
    msg = _error(tmp_path, exclude_cells=[cell])
    assert f"{key} must name" in msg and f"Got {value} instead" in msg
    if hint is not None:
        assert hint in msg


def test_a_cell_listed_twice_is_refused(tmp_path: Path) -> None:
    msg = _error(tmp_path, exclude_cells=[_cell("pixel", "isic2019")] * 2)
    assert "exclude_cells entries must be unique" in msg and "pixel×isic2019" in msg


def test_an_encoder_or_dataset_left_with_no_cell_is_refused(tmp_path: Path) -> None:
    msg = _error(tmp_path, exclude_cells=[_cell("pixel", d) for d in ("isic2019", "aptos2019",
                                                                        "chexpert")])  # fmt: skip
    assert "exclude_cells leaves encoder 'pixel' with no cell" in msg
    msg = _error(tmp_path, exclude_cells=[_cell(e, "aptos2019") for e in ("pixel", "random_cnn",
                                                                            "random_vit")])  # fmt: skip
    assert "exclude_cells leaves dataset 'aptos2019' with no cell" in msg


def test_a_cell_entry_needs_both_names_and_no_other_key(tmp_path: Path) -> None:
    assert "exclude_cells.0.dataset: required key is missing" in _error(
        tmp_path, exclude_cells=[{"encoder": "pixel"}]
    )
    msg = _error(tmp_path, exclude_cells=[{**_cell("pixel", "isic2019"), "seed": 0}])
    assert "exclude_cells.0.seed: unknown key" in msg


def test_the_paper_config_has_the_papers_43_cells() -> None:
    cfg = load_packaged_config("paper")
    assert [(c.encoder, c.dataset) for c in cfg.exclude_cells] == [
        ("biovil", "aptos2019"),
        ("chexzero", "aptos2019"),
    ]
    assert len(cfg.frozen_cells) == 43
    assert {d for e, d in cfg.frozen_cells if e in ("biovil", "chexzero")} == {
        "isic2019",
        "chexpert",
    }


def test_shift_rows_default_to_the_official_test_split(tmp_path: Path) -> None:
    assert SHIFT_ROWS == ("official_test", "all_frontal")
    assert _parse(tmp_path).shifts[0].rows == "official_test"
    shifts = [{"source": "chexpert", "target": "mimic_cxr", "rows": "all_frontal"}]
    assert _parse(tmp_path, shifts=shifts).shifts[0].rows == "all_frontal"


def test_an_unknown_shift_rows_value_is_refused(tmp_path: Path) -> None:
    msg = _error(tmp_path, shifts=[{"source": "chexpert", "target": "mimic_cxr", "rows": "test"}])
    assert "shifts.0.rows" in msg and "'official_test' or 'all_frontal'" in msg
    assert "Got 'test' instead" in msg


def test_one_target_has_one_set_of_rows(tmp_path: Path) -> None:
    shifts = [
        {"source": "chexpert", "target": "mimic_cxr", "rows": "official_test"},
        {"source": "isic2019", "target": "mimic_cxr", "rows": "all_frontal"},
    ]
    msg = _error(tmp_path, shifts=shifts)
    assert "shifts.1.rows must match" in msg and "Got 'all_frontal' instead" in msg


def test_a_misspelt_shift_target_suggests_the_dataset(tmp_path: Path) -> None:
    msg = _error(tmp_path, shifts=[{"source": "chexpert", "target": "mimic"}])
    assert "shifts.0.target must name a key of datasets" in msg
    assert "Got 'mimic' instead. Did you mean 'mimic_cxr'?" in msg
