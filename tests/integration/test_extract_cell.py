"""The pixel side of a cell: each image decoded once, clean rows back in dataset order."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from crsbench.config import parse_config
from crsbench.runs.extract_cell import extract_cell_features
from crsbench.runs.extraction import RunExtraction
from crsbench.runs.plan import plan_cells
from crsbench.runs.prepare import prepare_datasets

from .runner_fixtures import tiny_config_dict, write_tiny_data


@pytest.fixture(scope="module")
def cell(tmp_path_factory):
    root = tmp_path_factory.mktemp("extract_cell")
    data = write_tiny_data(root / "data")
    cfg = parse_config(tiny_config_dict(data, root / "out"), base_dir=root)
    prepared = prepare_datasets(cfg)
    modalities = {n: p.dataset.card.modality for n, p in prepared.items()}
    plan = next(c for c in plan_cells(cfg, modalities) if c.dataset == "isic2019")
    return cfg, plan, prepared["isic2019"]


def test_every_image_is_decoded_exactly_once(cell, monkeypatch):
    from crsbench.features import decode

    cfg, plan, prep = cell
    calls: Counter[str] = Counter()
    real = decode.decode_image

    def counting(path, size, bounds=None):
        calls[str(path)] += 1
        return real(path, size, bounds)

    monkeypatch.setattr(decode, "decode_image", counting)
    feats, _ = extract_cell_features(
        RunExtraction.from_config(cfg), plan, prep, None, progress=False
    )
    assert set(calls) == {str(p) for p in prep.dataset.paths}
    assert set(calls.values()) == {1}  # test rows too: clean and 4 perturbed copies, one decode
    assert len(feats["perturbed"]) == len(plan.conditions) == 15

    calls.clear()  # a rerun is served from the cache: nothing decoded
    again, _ = extract_cell_features(
        RunExtraction.from_config(cfg), plan, prep, None, progress=False
    )
    assert not calls
    for d in cfg.layers:
        assert again["clean"][d].status == "hit"
        np.testing.assert_array_equal(again["clean"][d].features, feats["clean"][d].features)


def test_clean_rows_follow_the_dataset_and_match_a_single_pass(cell, tmp_path):
    from crsbench.features import ExtractSettings, FeatureCache, extract
    from crsbench.runs.extract_cell import get_encoder

    cfg, plan, prep = cell
    feats, _ = extract_cell_features(
        RunExtraction.from_config(cfg), plan, prep, None, progress=False
    )
    ds = prep.dataset
    for d in cfg.layers:
        np.testing.assert_array_equal(feats["clean"][d].ids, ds.image_ids)
    settings = ExtractSettings(depths=tuple(cfg.layers), progress=False, num_workers=0)
    one = extract(get_encoder(RunExtraction.from_config(cfg), plan.encoder), ds.image_ids, ds.paths,
                  cache=FeatureCache(tmp_path / "c"), dataset_revision=ds.revision,
                  settings=settings)  # fmt: skip
    for d in cfg.layers:
        np.testing.assert_allclose(feats["clean"][d].features, one[("clean", d)].features,
                                   rtol=0, atol=1e-6)  # fmt: skip
    test_ids = ds.image_ids[prep.splits.test]
    for fa in feats["perturbed"].values():
        np.testing.assert_array_equal(fa.ids, test_ids)
        assert fa.depth == 1.0
