"""Content, not names, decides "already done" (#25 point 3).

Edit the labels of a cohort CSV and rerun ``profile``: new runs, not "1 already done"; the old
store, cohort.json and verdict are kept under ``superseded/`` (nothing lost), and the verdict
names the revision it describes. The store-level rule is the same for every dataset.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.store.records import RunRecord
from crsbench.store.writer import ResultsStore
from crsbench.testing.cohort import write_cohort

HASH = "cd" * 32


def _flat(text: str) -> str:
    return "".join(str(text).split())


def _runs(store: Path) -> list[tuple[str, str, object]]:
    with duckdb.connect(str(store / "results.duckdb"), read_only=True) as con:
        q = "SELECT run_key, dataset_revision, created_at FROM runs ORDER BY run_key"
        return con.execute(q).fetchall()


def _profile(csv: Path, images: Path, out: Path) -> str:
    r = CliRunner().invoke(app, ["profile", "--data", str(csv), "--images", str(images),
                                 "--label-columns", "diagnosis", "--group-column", "patient",
                                 "--encoders", "pixel", "--out", str(out), "--device", "cpu",
                                 "--jobs", "1"])  # fmt: skip
    assert r.exit_code == 0, r.output
    return r.output


def test_edited_labels_give_new_runs_and_keep_the_old(tmp_path: Path) -> None:
    csv, images = write_cohort(tmp_path / "data", 60, images_per_patient=1)
    out = tmp_path / "out"
    _profile(csv, images, out)
    first = _runs(out)
    old_rev = json.loads((out / "cohort.json").read_text())["revision"]
    old_page = (out / "verdict.html").read_text(encoding="utf-8")
    assert {r[1] for r in first} == {old_rev} and old_rev[:12] in old_page
    csv.write_text(csv.read_text().replace("P0000,40,benign", "P0000,40,malignant"))
    text = _flat(_profile(csv, images, out))
    assert _flat("(0 already done, 1 to run)") in text
    assert (
        _flat(f"dataset 'folder' changed: the store's runs are of revision {old_rev[:12]}") in text
    )
    new_rev = json.loads((out / "cohort.json").read_text())["revision"]
    assert new_rev != old_rev and {r[1] for r in _runs(out)} == {new_rev}
    page = (out / "verdict.html").read_text(encoding="utf-8")
    assert new_rev[:12] in page and old_rev[:12] not in page
    (kept,) = (out / "superseded").iterdir()  # the old profile, whole
    assert kept.name.startswith(f"data-folder-{old_rev[:12]}")
    assert _runs(kept) == first
    assert (kept / "verdict.html").read_text(encoding="utf-8") == old_page
    assert json.loads((kept / "cohort.json").read_text())["revision"] == old_rev
    assert _flat("(1 already done, 0 to run)") in _flat(_profile(csv, images, out))


def _record(seed: int, revision: str) -> RunRecord:
    return RunRecord(
        encoder="pixel", dataset="aptos2019", eval_dataset="aptos2019", seed=seed,
        metrics={"auroc": 0.8, "ece": 0.05, "brier": 0.1, "nll": 0.4}, config_hash=HASH, package_version="0.1.0",
        encoder_revision="sha256:enc", dataset_revision=revision, anchors_version="v1",
        wall_time_s=0.25, details={},
    )  # fmt: skip


def test_a_paper_dataset_revision_is_checked_the_same_way(tmp_path: Path) -> None:
    with ResultsStore(tmp_path, HASH) as store:
        store.append([_record(s, "a" * 64) for s in range(2)])
    before = _runs(tmp_path)
    with ResultsStore(tmp_path, HASH, dataset_revisions={"aptos2019": "a" * 64}) as store:
        assert not store.moved_aside and len(store.done_keys()) == 2  # same content: done
    with ResultsStore(tmp_path, HASH, dataset_revisions={"aptos2019": "b" * 64}) as store:
        assert store.done_keys() == set()
        assert "dataset 'aptos2019' changed" in store.moved_because
        assert f"{'a' * 12}" in store.moved_because and f"{'b' * 12}" in store.moved_because
        moved = dict(store.moved_aside)
    assert _runs(moved[tmp_path / "results.duckdb"].parent) == before
