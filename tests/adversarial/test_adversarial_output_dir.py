"""An output directory is crsbench's only when empty or marked; nothing foreign is overwritten."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.core.errors import StoreError
from crsbench.runs.outdir import MARKER_NAME, claim_output_dir


def _snapshot(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _unrelated(folder: Path) -> Path:
    (folder / "export").mkdir(parents=True)
    (folder / "last_run.json").write_text('{"mine": true}\n')
    (folder / "export" / "runs.csv").write_text("a,b\n1,2\n")
    (folder / "notes.txt").write_text("my thesis\n")
    return folder


def _config(tmp_path: Path) -> Path:
    data = tmp_path / "datasets" / "isic"
    data.mkdir(parents=True)
    path = tmp_path / "config.yaml"
    path.write_text(f"encoders: [pixel]\ndatasets:\n  isic2019: {{root: {data}}}\n")
    return path


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_run_into_an_unrelated_folder_changes_nothing(tmp_path: Path) -> None:
    target = _unrelated(tmp_path / "theirs")
    before = _snapshot(target)
    result = CliRunner().invoke(app, ["run", str(_config(tmp_path)), "--out", str(target)])
    assert result.exit_code == 2, result.output
    assert "not empty and was not written by crsbench" in _flat(result.output)
    assert _snapshot(target) == before and sorted(p.name for p in target.iterdir()) == [
        "export", "last_run.json", "notes.txt",
    ]  # fmt: skip


def test_force_still_never_overwrites_a_foreign_file(tmp_path: Path) -> None:
    target = _unrelated(tmp_path / "theirs")
    before = _snapshot(target)
    with pytest.raises(StoreError, match="export, last_run.json, not written by crsbench"):
        claim_output_dir(target, force=True)
    assert _snapshot(target) == before


def test_force_adds_beside_foreign_files_that_do_not_collide(tmp_path: Path) -> None:
    target = tmp_path / "theirs"
    target.mkdir()
    (target / "notes.txt").write_text("my thesis\n")
    with pytest.raises(StoreError, match="--force"):
        claim_output_dir(target)
    assert claim_output_dir(target, force=True) == target.resolve()
    assert (target / MARKER_NAME).is_file() and (target / "notes.txt").read_text() == "my thesis\n"
    assert claim_output_dir(target) == target.resolve()  # marked: crsbench's from now on


@pytest.mark.parametrize("where", ["root", "home", "dataset", "inside_dataset"])
def test_protected_folders_are_always_refused(tmp_path: Path, where: str) -> None:
    data = tmp_path / "data"
    data.mkdir()
    out = {
        "root": Path("/"),
        "home": Path.home(),
        "dataset": data,
        "inside_dataset": data / "results",
    }[where]
    with pytest.raises(StoreError, match="root|home directory|dataset root"):
        claim_output_dir(out, dataset_roots=[data], force=True)
    assert not (data / "results").exists()


def test_out_is_a_file(tmp_path: Path) -> None:
    target = tmp_path / "results.txt"
    target.write_text("x\n")
    result = CliRunner().invoke(app, ["run", str(_config(tmp_path)), "--out", str(target)])
    assert result.exit_code == 2 and "is a file" in _flat(result.output)
    assert target.read_text() == "x\n" and "Traceback" not in result.output


def test_a_file_named_cache_in_crsbench_folder(tmp_path: Path) -> None:
    target = tmp_path / "out"
    claim_output_dir(target)
    (target / "cache").write_text("not a folder\n")
    with pytest.raises(StoreError, match="cache is a file, where crsbench keeps its folder"):
        claim_output_dir(target)


def test_empty_and_new_folders_are_claimed_and_marked(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    for name in ("empty", "new/deeper"):
        out = claim_output_dir(tmp_path / name)
        assert (out / MARKER_NAME).is_file()
