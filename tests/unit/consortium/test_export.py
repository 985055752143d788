"""``build_summary`` on a store written by the real writer with planted predictions: the point
values are the verdict page's, the variances are those of the test-patient bootstrap, small
counts are suppressed and named, and a store that is not a profile is refused."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from crsbench.consortium.export import build_summary
from crsbench.consortium.settings import load_settings
from crsbench.consortium.summary import read_summary, write_summary
from crsbench.core.errors import DataError
from crsbench.testing.prediction_store import toy_cells, write_prediction_store

N_REPLICATES = 100


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cells = {k: v for k, v in toy_cells().items() if k in ("vit_b16", "clip")}
    folder = tmp_path_factory.mktemp("toy")
    write_prediction_store(folder, cells)
    return folder


def test_summary_values_variances_and_suppression(store: Path, tmp_path: Path) -> None:
    from crsbench.scoring import aggregate_by_encoder, score_runs
    from crsbench.store import load_runs

    settings = dataclasses.replace(load_settings(), n_replicates=N_REPLICATES, min_cell_size=50)
    s = build_summary(store, " hospital_x ", settings)
    assert s.site == "hospital_x" and s.task == "multilabel" and len(s.labels) == 14
    # 80 test patients with one image each, 40 positives per label: the labels are < 50
    assert (s.sizes.images, s.sizes.patients) == (80, 80)
    assert set(s.sizes.per_label.values()) == {None}
    assert s.suppressed == tuple(f"test_sizes.per_label.{x}" for x in s.labels)
    board = aggregate_by_encoder(score_runs(load_runs(store), plan=store)).set_index("encoder")
    for e in s.encoders:
        for q in ("auroc", "ece", "CRS"):
            assert e.estimates[q].value == pytest.approx(board.loc[e.encoder, q], abs=1e-12)
        assert e.estimates["CRS"].variance > 0 and e.estimates["ece"].variance > 0
    # the CRS variance is that of the encoder's own bootstrap column (its P(rank 1) too)
    ranks = _bootstrap_ranks(store, settings.n_replicates)
    for e in s.encoders:
        low, high = ranks.loc[e.encoder, ["crs_ci_low", "crs_ci_high"]]
        assert 4 * np.sqrt(e.estimates["CRS"].variance) > (high - low) / 2 > 0

    path = write_summary(s, tmp_path / "x.json")
    assert read_summary(path) == s
    doc = json.loads(path.read_text())
    assert doc["settings"]["min_cell_size"] == 50 and doc["n_replicates"] == N_REPLICATES
    assert all(doc["test_sizes"]["per_label"][x] is None for x in s.labels)


def _bootstrap_ranks(store: Path, n_replicates: int):
    """The leaderboard bootstrap's percentile intervals of the CRS per encoder."""
    from crsbench.scoring import axes_from_runs
    from crsbench.stats.uncertainty import crs_uncertainty
    from crsbench.store import load_runs

    unc = crs_uncertainty(axes_from_runs(load_runs(store)), store=store, n_replicates=n_replicates)
    return unc.result.ranks.set_index("encoder")


def test_summary_carries_no_ids(store: Path) -> None:
    """Every test row's patient and image id of the store stays out of the summary."""
    from crsbench.consortium.summary import summary_to_dict
    from crsbench.stats.store_predictions import load_store_predictions

    settings = dataclasses.replace(load_settings(), n_replicates=N_REPLICATES)
    s = build_summary(store, "h", settings)
    body = json.dumps(summary_to_dict(s))
    pred = load_store_predictions(store, [("clip", "chexpert")], [0]).cells[("clip", "chexpert")]
    ids = {f'"{x}"' for x in np.asarray(pred.test.groups).astype(str)}
    assert ids and not any(x in body for x in ids)


def test_refuses_a_store_with_several_datasets(tmp_path: Path) -> None:
    from crsbench.testing import simulate_runs, write_store

    write_store(simulate_runs(n_encoders=2, datasets=("isic2019", "aptos2019"), seeds=2,
                              rng_seed=0), tmp_path)  # fmt: skip
    with pytest.raises(DataError, match="one dataset.*holds 2"):
        build_summary(tmp_path, "h")


def test_export_summary_command(store: Path, tmp_path: Path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from crsbench.cli import app
    from crsbench.consortium import settings as settings_module

    fast = dataclasses.replace(load_settings(), n_replicates=N_REPLICATES)
    monkeypatch.setattr(settings_module, "_default", lambda: fast)
    out = tmp_path / "site.json"
    r = CliRunner().invoke(app, ["export-summary", "--store", str(store), "--site", "h1",
                                 "--out", str(out), "--json"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert json.loads(r.output) == json.loads(out.read_text())
    foreign = tmp_path / "theirs.json"
    foreign.write_text("{}")
    r = CliRunner().invoke(app, ["export-summary", "--store", str(store), "--site", "h1",
                                 "--out", str(foreign)])  # fmt: skip
    assert r.exit_code == 2 and "was not written by crsbench" in " ".join(r.output.split())
    assert foreign.read_text() == "{}"
