"""``crsbench status`` and a shift target's revision: content, not names, decides "already done".

``status`` compares each dataset's current revision (label file + image list) with the store's,
exactly as ``run`` does before it moves a store to ``superseded/``: a changed ``folder`` CSV or
a changed shift-target CSV makes every stored cell ``stale`` (0 done) with the dataset and both
revisions named, and leaves the store untouched. A shift record carries its target's revision
(``details.eval_dataset_revision``), so a changed target gives new runs; records written before
it was recorded are not compared (their store is kept, not moved).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.config import BenchmarkConfig, config_hash
from crsbench.runs.plan import plan_cells
from crsbench.runs.prepare import current_revisions
from crsbench.runs.status import grid_status
from crsbench.store.records import RunRecord
from crsbench.store.writer import ResultsStore
from crsbench.testing.cohort import write_cohort


def _flat(text: str) -> str:
    return "".join(str(text).split())


def _write_config(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A folder probe dataset with an APTOS shift target (labels only: files unchecked)."""
    csv, _ = write_cohort(tmp_path / "data", 12, images_per_patient=1)
    aptos = tmp_path / "aptos"
    aptos.mkdir()
    (aptos / "train.csv").write_text(
        "id_code,diagnosis\n" + "".join(f"a{i},{i % 5}\n" for i in range(10))
    )
    config = tmp_path / "config.yaml"
    config.write_text(
        "encoders: [pixel]\nseeds: [0]\n"
        f"output_dir: {tmp_path / 'out'}\n"
        "datasets:\n"
        f"  folder: {{root: {csv.parent}, options: {{csv: cohort.csv, image_dir: images, "
        "label_columns: diagnosis, group_column: patient}}\n"
        f"  aptos2019: {{root: {aptos}}}\n"
        "shifts: [{source: folder, target: aptos2019, rows: all_frontal}]\n"
    )
    return config, csv, aptos / "train.csv"


def _cfg(config: Path) -> BenchmarkConfig:
    from crsbench.config import load_config

    return load_config(config)


def _store_two_runs(cfg: BenchmarkConfig) -> list[tuple]:
    """One clean and one shift record of the plan, with the datasets' current revisions."""
    revisions, problems = current_revisions(cfg)
    assert problems == {} and set(revisions) == {"folder", "aptos2019"}
    (cell,) = plan_cells(cfg, {"folder": "other"})
    clean = next(i for i in cell.identities if i.condition == "clean")
    shift = next(i for i in cell.identities if i.condition == "shift")
    h = config_hash(cfg)
    records = [
        RunRecord(
            **dataclasses.asdict(ident),
            metrics={"auroc": 0.8, "ece": 0.05, "brier": 0.1, "nll": 0.4},
            config_hash=h,
            package_version="0.1.0",
            encoder_revision="sha256:enc",
            dataset_revision=revisions["folder"],
            anchors_version="v1",
            wall_time_s=0.1,
            details=extra,
        )  # fmt: skip
        for ident, extra in (
            (clean, {}),
            (shift, {"eval_dataset_revision": revisions["aptos2019"]}),
        )
    ]
    with ResultsStore(cfg.output_dir, h, dataset_revisions=revisions) as store:
        store.append(records)
    return _runs(cfg)


def _runs(cfg: BenchmarkConfig) -> list[tuple]:
    with duckdb.connect(str(Path(cfg.output_dir) / "results.duckdb"), read_only=True) as con:
        return con.execute("SELECT * FROM runs ORDER BY run_key").fetchall()


def _status_rows(cfg: BenchmarkConfig) -> list[dict]:
    return [r for r in grid_status(cfg)[1] if r["regime"] == "frozen"]


@pytest.mark.parametrize("edited", ["folder", "aptos2019"])
def test_status_reports_cells_of_a_changed_dataset_as_stale(tmp_path: Path, edited: str) -> None:
    config, csv, aptos_csv = _write_config(tmp_path)
    cfg = _cfg(config)
    before = _store_two_runs(cfg)
    old = current_revisions(cfg)[0][edited]
    (row,) = _status_rows(cfg)
    assert row["state"] == "partial" and row["done"] == 2 and row["reason"] == ""
    if edited == "folder":  # one label of one image
        csv.write_text(csv.read_text().replace("P0000,40,benign", "P0000,40,malignant"))
    else:
        aptos_csv.write_text(aptos_csv.read_text().replace("a3,3", "a3,4"))
    new = current_revisions(cfg)[0][edited]
    assert new != old
    (row,) = _status_rows(cfg)
    assert row["state"] == "stale" and row["done"] == 0 and row["planned"] > 2
    assert (f"dataset {edited!r} changed: the store's runs are of revision {old[:12]}, its "
            f"label file and image list now give {new[:12]}") in row["reason"]  # fmt: skip
    assert "superseded/" in row["reason"]
    result = CliRunner().invoke(app, ["status", str(config)])
    assert result.exit_code == 0, result.output
    said = _flat(result.output)
    assert "stale" in said and _flat(f"dataset '{edited}' changed") in said
    assert _runs(cfg) == before  # status reads: nothing moved, nothing rewritten


def test_a_changed_shift_target_moves_the_store_aside_whole(tmp_path: Path) -> None:
    config, _, aptos_csv = _write_config(tmp_path)
    cfg = _cfg(config)
    before = _store_two_runs(cfg)
    aptos_csv.write_text(aptos_csv.read_text() + "a99,2\n")  # one more image in the target
    revisions = current_revisions(cfg)[0]
    out = Path(cfg.output_dir)
    with ResultsStore(out, config_hash(cfg), dataset_revisions=revisions) as store:
        assert store.done_keys() == set()  # new runs, not "already done"
        assert "dataset 'aptos2019' changed" in store.moved_because
        moved = dict(store.moved_aside)
    kept = moved[out / "results.duckdb"]
    assert kept.parent.name.startswith("data-aptos2019-")
    with duckdb.connect(str(kept), read_only=True) as con:
        assert con.execute("SELECT * FROM runs ORDER BY run_key").fetchall() == before


def test_shift_records_without_a_target_revision_are_kept(tmp_path: Path) -> None:
    """A store written before shift records carried their target's revision is not moved."""
    config, _, aptos_csv = _write_config(tmp_path)
    cfg = _cfg(config)
    revisions = current_revisions(cfg)[0]
    (cell,) = plan_cells(cfg, {"folder": "other"})
    shift = next(i for i in cell.identities if i.condition == "shift")
    h = config_hash(cfg)
    record = RunRecord(**dataclasses.asdict(shift),
                       metrics={"auroc": 0.8, "ece": 0.05, "brier": 0.1, "nll": 0.4}, config_hash=h, package_version="0.1.0", encoder_revision="sha256:enc",
                       dataset_revision=revisions["folder"], anchors_version="v1",
                       wall_time_s=0.1, details={"shift_rows": {"rows": "all_frontal"}})  # fmt: skip
    with ResultsStore(cfg.output_dir, h) as store:
        store.append([record])
    aptos_csv.write_text(aptos_csv.read_text() + "a99,2\n")
    with ResultsStore(cfg.output_dir, h, dataset_revisions=current_revisions(cfg)[0]) as store:
        assert not store.moved_aside and len(store.done_keys()) == 1


def test_a_prepared_shift_target_records_its_revision() -> None:
    import numpy as np
    import pandas as pd

    from crsbench.datasets.base import Dataset
    from crsbench.runs.prepare import PreparedDataset

    ds = Dataset.__new__(Dataset)
    object.__setattr__(ds, "revision", "r" * 64)
    object.__setattr__(ds, "groups", np.array(["p0", "p1", "p1"]))
    object.__setattr__(ds, "metadata", pd.DataFrame(index=range(3)))
    target = PreparedDataset(ds, None, {}, np.arange(3), eval_rows_choice="all_frontal")  # type: ignore[arg-type]
    details = target.shift_details(np.array([True, True, False]))
    assert details.as_json() == {"eval_dataset_revision": "r" * 64,
                       "shift_rows": {"rows": "all_frontal", "n_images": 2, "n_patients": 2}}  # fmt: skip
