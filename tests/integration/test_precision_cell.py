"""A cell's precision: resolved by the check, in the feature keys and in every run record."""

from __future__ import annotations

import warnings

import pytest

from crsbench.config import parse_config
from crsbench.evaluation import precision_check
from crsbench.runs.executors import run_one_cell
from crsbench.runs.extract_cell import extract_cell_features
from crsbench.runs.extraction import RunExtraction
from crsbench.runs.pipeline import cell_settings
from crsbench.runs.plan import plan_cells
from crsbench.runs.prepare import prepare_datasets
from crsbench.runs.rows import Provenance, to_records

from .runner_fixtures import tiny_config_dict, write_tiny_data


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_tiny_data(tmp_path_factory.mktemp("precision_cell") / "data")


def _cell(data, out, **overrides):
    cfg_dict = {**tiny_config_dict(data, out / "out"), **overrides}
    cfg_dict["datasets"] = {"isic2019": cfg_dict["datasets"]["isic2019"]}
    cfg_dict["shifts"] = []
    cfg = parse_config(cfg_dict, base_dir=out)
    prepared = prepare_datasets(cfg)
    modalities = {n: p.dataset.card.modality for n, p in prepared.items()}
    plan = next(c for c in plan_cells(cfg, modalities) if c.dataset == "isic2019")
    return cfg, plan, prepared


def test_auto_on_cpu_is_fp32_unchecked_and_recorded(data, tmp_path, monkeypatch):
    monkeypatch.setattr(precision_check, "measure", lambda *a: pytest.fail("no check on CPU"))
    cfg, plan, prepared = _cell(data, tmp_path)
    feats, rev = extract_cell_features(
        RunExtraction.from_config(cfg), plan, prepared["isic2019"], None, progress=False
    )
    assert rev.endswith("|precision:fp32")
    assert feats["precision"]["precision"] == "fp32" and feats["precision"]["checked"] is False
    assert feats["precision"]["requested"] == "auto"


def test_checked_bf16_changes_the_keys_and_reaches_the_run_details(data, tmp_path, monkeypatch):
    cfg, plan, prepared = _cell(data, tmp_path, precision="fp32")
    fp32, _ = extract_cell_features(
        RunExtraction.from_config(cfg), plan, prepared["isic2019"], None, progress=False
    )

    monkeypatch.setattr(precision_check, "bf16_candidate", lambda device_type: True)
    cfg, plan, prepared = _cell(data, tmp_path)  # same cache dir, precision auto
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # emulated bf16 on some CPUs
        out = run_one_cell(
            RunExtraction.from_config(cfg), plan, prepared, cell_settings(cfg), progress=False
        )
        feats, rev = extract_cell_features(
            RunExtraction.from_config(cfg), plan, prepared["isic2019"], None, progress=False
        )
    dec = out.precision
    # the pixel baseline has no autocast op on its path: bf16 is exact and passes the check
    assert dec["checked"] is True and dec["passed"] is True and dec["precision"] == "bf16", dec[
        "reason"
    ]
    assert dec["min_cosine"] == pytest.approx(1.0, abs=1e-9)
    assert dec["n_images"] == min(64, len(prepared["isic2019"].splits.train) + len(
        prepared["isic2019"].splits.val))  # fmt: skip
    assert rev.endswith("|precision:bf16") and out.encoder_revision == rev
    assert len(list((cfg.resolved_cache_dir / "precision").glob("*.json"))) == 1
    for d in cfg.layers:  # the resolved precision is part of every feature key
        assert feats["clean"][d].key != fp32["clean"][d].key

    prov = Provenance(config_hash="0" * 64, encoder_revision=out.encoder_revision,
                      dataset_revision="r", anchors_version="v1", package_version="t",
                      precision=out.precision)  # fmt: skip
    assert all(r.details.precision == {} for r in out.results)  # added with the provenance
    records = to_records(out.results, prov)
    assert records and all(r.details.precision == dec for r in records)
    assert all(r.details_object()["precision"] == dec for r in records)
    assert all(r.encoder_revision.endswith("|precision:bf16") for r in records)
