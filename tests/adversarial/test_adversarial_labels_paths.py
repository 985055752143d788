"""Edges (#25 point 6) and what the fuzz test found (point 7): one file in two spellings is a
duplicate, named; label values that are not finite or not representable are refused naming
row and column; ``datasets check`` prints tab-separated lines into a pipe."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml
from PIL import Image
from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.core.errors import ConfigError, CrsbenchError, DataError
from crsbench.datasets import load
from crsbench.datasets.check import check


def _folder(root: Path, rows: list[str], header: str = "path,label") -> Path:
    (root / "a").mkdir(parents=True, exist_ok=True)
    for i in range(6):
        Image.new("L", (16, 16), color=i * 20).save(root / "a" / f"img{i}.png")
    lines = [header, *rows]
    (root / "labels.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


BASE = [f"a/img{i}.png,{'xy'[i % 2]}" for i in range(6)]


def test_one_file_in_two_spellings_is_a_duplicate(tmp_path: Path) -> None:
    root = _folder(tmp_path, [*BASE, "a/../a/img3.png,y"])
    with pytest.raises(DataError) as err:
        load("folder", root)
    text = str(err.value)
    assert "row 4 (image 'a/img3.png'" in text and "row 7 (image 'a/../a/img3.png'" in text
    assert f"name the same file {str(root / 'a' / 'img3.png')!r}" in text
    report = check("folder", root)
    assert not report.ok and "a/../a/img3.png" in report.errors[0]


def test_dot_segments_and_a_symlink_are_duplicates(tmp_path: Path) -> None:
    root = _folder(tmp_path, [*BASE, "./a/img1.png,y"])
    with pytest.raises(DataError, match=r"row 2 .*row 7 \(image './a/img1.png'"):
        load("folder", root)
    root = _folder(tmp_path / "linked", [*BASE, "alias.png,x"])
    os.symlink(root / "a" / "img0.png", root / "alias.png")
    with pytest.raises(DataError, match=r"row 1 .*row 7 \(image 'alias.png'.*img0\.png'"):
        load("folder", root)


def test_two_ids_for_one_file_are_a_duplicate(tmp_path: Path) -> None:
    rows = [f"a/img{i}.png,{'xy'[i % 2]},id{i}" for i in range(6)] + ["a/img5.png,y,other"]
    root = _folder(tmp_path, rows, header="path,label,image")
    with pytest.raises(DataError, match=r"row 6 \(image 'id5'.*row 7 \(image 'other'"):
        load("folder", root, id_column="image")


def test_distinct_files_still_load(tmp_path: Path) -> None:
    assert len(load("folder", _folder(tmp_path, BASE))) == 6


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("inf", "a finite number"),
        ("-inf", "a finite number"),
        ("1e400", "a finite number"),
        ("1e20", "an integer class below 2**53 in magnitude"),
        ("9007199254740993.0", "an integer class below 2**53 in magnitude"),
        ("1.5", "an integer class below 2**53 in magnitude"),
        ("abc", "a number like its other rows"),
        ("nan", "a class (integer or"),  # a missing-value marker: refused as no class
    ],
)
def test_a_label_that_is_not_a_representable_number(
    tmp_path: Path, value: str, expected: str
) -> None:
    rows = [f"a/img{i}.png,{i % 3}" for i in range(5)] + [f"a/img5.png,{value}"]
    root = _folder(tmp_path, rows, header="path,grade")
    with pytest.raises(DataError) as err:
        load("folder", root)
    text = str(err.value)
    assert "labels.csv: column 'grade' must be " + expected in text
    assert f"Got {value!r} instead at data row 6 (line 7)" in text


def test_integer_and_named_classes_still_load(tmp_path: Path) -> None:
    rows = [f"a/img{i}.png,{i % 3}" for i in range(5)] + ["a/img5.png,2.0"]
    data = load("folder", _folder(tmp_path / "n", rows, header="path,grade"))
    assert data.label_names == ("0", "1", "2") and data.labels[5, 2] == 1.0
    rows = [f"a/img{i}.png,{i % 2 + 2**60}" for i in range(6)]  # int64: held exactly
    data = load("folder", _folder(tmp_path / "i", rows, header="path,grade"))
    assert data.label_names == (str(2**60), str(2**60 + 1))
    data = load("folder", _folder(tmp_path / "w", BASE))
    assert data.label_names == ("x", "y")


@pytest.mark.parametrize("value", [1, [[]], {"a": 1}, ""])
def test_a_column_option_that_is_not_text_is_named(tmp_path: Path, value: object) -> None:
    """Fuzz find: ``group_column: 1`` (a cohort YAML) was a TypeError inside difflib."""
    root = _folder(tmp_path, BASE)
    with pytest.raises(
        ConfigError, match="group_column must be a column name .*" + re.escape(repr(value))
    ):
        load("folder", root, group_column=value)
    with pytest.raises(ConfigError, match="path_column must be a column name"):
        load("folder", root, path_column=None)


def test_a_cohort_yaml_max_images_that_is_not_an_integer_is_named(tmp_path: Path) -> None:
    """Fuzz find (test_profile_checks_on_fuzzed_cohort_yaml, overrides={'max_images': []})."""
    from crsbench.cohort.profile import check_cohort
    from crsbench.cohort.spec import read_spec

    _folder(tmp_path, BASE)
    path = tmp_path / "cohort.yaml"
    spec = {"data": "labels.csv", "images": ".", "label_columns": "label", "max_images": []}
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    with pytest.raises(CrsbenchError, match=r"cohort\.yaml.*max_images"):
        check_cohort(read_spec(path))


def test_datasets_check_prints_tab_separated_lines_into_a_pipe(tmp_path: Path) -> None:
    root = _folder(tmp_path, BASE)
    result = CliRunner().invoke(app, ["datasets", "check", "folder", "--root", str(root)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"dataset folder at {root}: OK"
    assert "label\tpositives\tmasked\tprevalence" in lines
    assert "x\t3\t0\t0.5000" in lines and "y\t3\t0\t0.5000" in lines
    assert not any(ch in result.output for ch in "┏━┃│└╇")  # no box drawing
    (root / "a" / "img2.png").write_bytes(b"not an image")
    result = CliRunner().invoke(app, ["datasets", "check", "folder", "--root", str(root)])
    assert result.exit_code == 1
    assert f"  row 3: {root / 'a' / 'img2.png'} (" in result.output.splitlines()[7]
