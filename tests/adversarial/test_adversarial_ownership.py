"""Every command that writes a file asks one helper (``crsbench.store.outputs``) first: never
a store, never a file or folder crsbench did not write, and an interrupted write is cleaned
or left claimed so the rerun proceeds."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from store_fixtures import one_record_store
from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.core.errors import StoreError
from crsbench.store.outputs import MARKER_NAME, write_output_file

HASH = "ab" * 32


class _Said(str):
    """The output without whitespace (the console folds long paths anywhere)."""

    def __contains__(self, phrase: object) -> bool:
        return "".join(str(phrase).split()) in str(self)


def _invoke(*args: object):
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result, _Said("".join(result.output.split()))


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _snapshot(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): _digest(p) for p in sorted(folder.rglob("*")) if p.is_file()
    }


def _store(folder: Path) -> Path:
    return one_record_store(folder)


def _cohort_csv(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "cohort.csv"
    path.write_text("path,label,patient\na.png,0,p1\nb.png,1,p2\n")
    return path


@pytest.mark.parametrize("command", ["predict", "verdict"])
def test_out_never_overwrites_a_store(tmp_path: Path, command: str) -> None:
    store = _store(tmp_path / "profile")
    target = store / "results.duckdb"
    before = _digest(target)
    args = (
        ["predict", "--model", tmp_path / "model", "--images", tmp_path, "--out", target]
        if command == "predict"
        else ["verdict", "--store", store, "--out", target]
    )
    result, said = _invoke(*args)
    assert result.exit_code == 2, result.output
    assert f"{target} is a results store's file" in said and "Traceback" not in result.output
    assert _digest(target) == before


def test_out_never_overwrites_a_store_under_another_name(tmp_path: Path) -> None:
    store = _store(tmp_path / "profile")
    copy = tmp_path / "backup.db"
    copy.write_bytes((store / "results.duckdb").read_bytes())
    result, said = _invoke("verdict", "--store", store, "--out", copy)
    assert result.exit_code == 2 and f"{copy} is a results store's file" in said
    assert _digest(copy) == _digest(store / "results.duckdb")


@pytest.mark.parametrize("command", ["predict", "verdict"])
def test_out_never_overwrites_the_users_cohort_csv(tmp_path: Path, command: str) -> None:
    csv = _cohort_csv(tmp_path / "mine")
    before = _digest(csv)
    store = _store(tmp_path / "profile")
    args = (
        ["predict", "--model", tmp_path / "model", "--images", csv, "--out", csv]
        if command == "predict"
        else ["verdict", "--store", store, "--out", csv]
    )
    result, said = _invoke(*args)
    assert result.exit_code == 2, result.output
    assert f"{csv} exists and was not written by crsbench" in said
    assert _digest(csv) == before and sorted(p.name for p in csv.parent.iterdir()) == ["cohort.csv"]


def test_a_file_crsbench_wrote_is_replaced_atomically(tmp_path: Path) -> None:
    target = tmp_path / "out" / "predictions.csv"
    assert write_output_file(target, lambda tmp: tmp.write_text("first\n")) == target.resolve()
    write_output_file(target, lambda tmp: tmp.write_text("second\n"))
    assert target.read_text() == "second\n"
    claim = json.loads((target.parent / MARKER_NAME).read_text())
    assert claim["scope"] == "files" and claim["files"] == ["predictions.csv"]

    def interrupted(tmp: Path) -> None:
        tmp.write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_output_file(target, interrupted)
    assert target.read_text() == "second\n"  # the old file, whole; no temporary file left
    assert sorted(p.name for p in target.parent.iterdir()) == [MARKER_NAME, "predictions.csv"]


def test_a_files_claim_does_not_claim_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "index.html").write_text("mine\n")
    write_output_file(folder / "verdict.html", lambda tmp: tmp.write_text("page\n"))
    with pytest.raises(StoreError, match="index.html exists and was not written by crsbench"):
        write_output_file(folder / "index.html", lambda tmp: tmp.write_text("page\n"))
    result, said = _invoke("score", "--store", _store(tmp_path / "s"), "--out", folder)
    assert result.exit_code == 2 and f"{folder} is not empty and was not written" in said
    assert (folder / "index.html").read_text() == "mine\n"


def test_a_folder_claimed_by_an_older_crsbench_stays_crsbench_s(tmp_path: Path) -> None:
    folder = tmp_path / "profile"
    folder.mkdir()
    (folder / MARKER_NAME).write_text('{"crsbench": "0.1.0", "claimed": "2024-01-01"}\n')
    (folder / "verdict.html").write_text("old page\n")
    (folder / "cohort.json").write_text("{}\n")
    write_output_file(folder / "verdict.html", lambda tmp: tmp.write_text("new page\n"))
    assert (folder / "verdict.html").read_text() == "new page\n"
    write_output_file(folder / "cohort.json", lambda tmp: tmp.write_text('{"n": 1}\n'))
    assert (folder / "cohort.json").read_text() == '{"n": 1}\n'  # still every file's claim
    with pytest.raises(StoreError, match="results store's file"):
        write_output_file(folder / "results.duckdb", lambda tmp: tmp.write_text("x"))


def test_synth_overwrite_never_deletes_a_folder_it_did_not_write(tmp_path: Path) -> None:
    out = tmp_path / "data"
    theirs = out / "isic2019"
    theirs.mkdir(parents=True)
    (theirs / "ISIC_2019_Training_GroundTruth.csv").write_text("image,MEL\nmine,1\n")
    (theirs / "thesis.txt").write_text("three years\n")
    before = _snapshot(out)
    result, said = _invoke("synth", "--out", out, "--overwrite")
    assert result.exit_code == 2, result.output
    assert f"{theirs} was not written by crsbench" in said and "--overwrite" in said
    assert _snapshot(out) == before and [p.name for p in out.iterdir()] == ["isic2019"]


def test_synth_overwrite_never_deletes_a_file(tmp_path: Path) -> None:
    out = tmp_path / "data"
    out.mkdir()
    (out / "aptos2019").write_text("my notes\n")
    result, said = _invoke("synth", "--out", out, "--overwrite")
    assert result.exit_code == 2 and f"{out / 'aptos2019'} is a file" in said
    assert (out / "aptos2019").read_text() == "my notes\n"


@pytest.mark.parametrize("existed", [True, False])
def test_report_interrupted_then_rerun_proceeds(tmp_path: Path, monkeypatch, existed: bool) -> None:
    import crsbench.report

    store = _store(tmp_path / "out")
    out = tmp_path / "report"
    if existed:
        out.mkdir()

    def interrupted(store_dir, folder, *_args, **_):
        (Path(folder) / "figures").mkdir()
        (Path(folder) / "figures" / "half.png").write_bytes(b"\x89PNG half")
        raise KeyboardInterrupt

    monkeypatch.setattr(crsbench.report, "build_report", interrupted)
    result, said = _invoke("report", "--store", store, "--out", out, "--replicates", 0)
    assert result.exit_code == 130 and "interrupted" in said, result.output
    assert out.exists() == existed  # a folder this call created is removed, else it is claimed

    def complete(store_dir, folder, *_args, **_):
        (Path(folder) / "index.html").write_text("<html></html>\n")
        return Path(folder) / "index.html"

    monkeypatch.setattr(crsbench.report, "build_report", complete)
    result, said = _invoke("report", "--store", store, "--out", out, "--replicates", 0)
    assert result.exit_code == 0, result.output
    assert (out / "index.html").is_file() and (out / MARKER_NAME).is_file()


def test_a_foreign_cache_dir_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    data = tmp_path / "datasets" / "isic"
    data.mkdir(parents=True)
    cache = tmp_path / "photos"
    cache.mkdir()
    (cache / "holiday.jpg").write_bytes(b"\xff\xd8 mine")
    config = tmp_path / "config.yaml"
    config.write_text(
        f"encoders: [pixel]\ncache_dir: {cache}\ndatasets:\n  isic2019: {{root: {data}}}\n"
    )
    out = tmp_path / "out"
    before = _snapshot(cache)
    result, said = _invoke("run", config, "--out", out)
    assert result.exit_code == 2, result.output
    assert f"cache_dir {cache} is not empty and was not written by crsbench" in said
    assert _snapshot(cache) == before and sorted(p.name for p in cache.iterdir()) == ["holiday.jpg"]
    assert not out.exists() and "Traceback" not in result.output


def test_a_feature_cache_from_before_the_marker_is_still_used(tmp_path: Path) -> None:
    from crsbench.runs.outdir import claim_cache_dir

    cache = tmp_path / "cache"
    for sub in ("objects", "corrupt", "locks"):
        (cache / sub).mkdir(parents=True)
    claim_cache_dir(cache, create=True)
    assert (cache / MARKER_NAME).is_file()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "objects").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine\n")
    with pytest.raises(StoreError, match="cache_dir .* was not written by crsbench"):
        claim_cache_dir(tmp_path / "other", create=False)


def test_force_never_writes_a_profile_over_the_users_verdict(tmp_path: Path) -> None:
    from crsbench.runs.outdir import claim_output_dir

    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "verdict.html").write_text("<p>my own verdict</p>\n")
    before = _snapshot(theirs)
    with pytest.raises(StoreError, match="already holds verdict.html, not written by crsbench"):
        claim_output_dir(theirs, force=True)
    assert _snapshot(theirs) == before and [p.name for p in theirs.iterdir()] == ["verdict.html"]


def test_synth_out_that_is_a_file_is_named(tmp_path: Path) -> None:
    out = tmp_path / "data.csv"
    out.write_text("a,b\n1,2\n")
    result, said = _invoke("synth", "--out", out)
    assert result.exit_code == 2 and f"--out {out} is a file" in said
    assert out.read_text() == "a,b\n1,2\n" and "Traceback" not in result.output
