"""Image paths that leave the dataset root are refused with the row named; check prints no bytes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.core.errors import DataError
from crsbench.datasets import load
from crsbench.datasets.check import check as check_dataset


def _folder(root: Path, rows: list[str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(8):
        Image.new("L", (16, 16), color=i * 20).save(root / f"img{i}.png")
    lines = ["path,label"] + [f"img{i}.png,{'a' if i % 2 else 'b'}" for i in range(8)] + rows
    (root / "labels.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def _outside_image(tmp_path: Path) -> Path:
    secret = tmp_path / "elsewhere" / "secret.png"
    secret.parent.mkdir()
    Image.new("L", (16, 16)).save(secret)
    return secret


def test_dotdot_path_is_refused_with_its_row(tmp_path: Path) -> None:
    _outside_image(tmp_path)
    root = _folder(tmp_path / "data", ["../elsewhere/secret.png,a"])
    with pytest.raises(DataError) as err:
        load("folder", root)
    text = str(err.value)
    assert "1 image path(s) leave the dataset root" in text
    assert "row 9" in text and "../elsewhere/secret.png" in text


def test_absolute_path_is_refused_unless_allowed(tmp_path: Path) -> None:
    secret = _outside_image(tmp_path)
    root = _folder(tmp_path / "data", [f"{secret},a"])
    with pytest.raises(DataError, match="row 9"):
        load("folder", root)
    data = load("folder", root, allow_outside_root=True)
    assert str(secret) in set(data.paths)


def test_symlink_out_of_the_root_is_refused(tmp_path: Path) -> None:
    secret = _outside_image(tmp_path)
    root = _folder(tmp_path / "data", ["link.png,a"])
    os.symlink(secret, root / "link.png")
    with pytest.raises(DataError, match=r"row 9 .*leads to .*secret\.png"):
        load("folder", root)


def test_symlinked_directory_out_of_the_root_is_refused(tmp_path: Path) -> None:
    secret = _outside_image(tmp_path)
    root = _folder(tmp_path / "data", ["sub/secret.png,a"])
    os.symlink(secret.parent, root / "sub")
    with pytest.raises(DataError, match="row 9"):
        load("folder", root)


def test_symlink_inside_the_root_is_fine(tmp_path: Path) -> None:
    # The target is not listed itself: a symlink to a listed image is a duplicate (below).
    root = _folder(tmp_path / "data", ["alias.png,a"])
    (root / "originals").mkdir()
    Image.new("L", (16, 16)).save(root / "originals" / "x.png")
    os.symlink(root / "originals" / "x.png", root / "alias.png")
    assert len(load("folder", root)) == 9


def test_allow_outside_root_must_be_a_bool(tmp_path: Path) -> None:
    root = _folder(tmp_path / "data", [])
    with pytest.raises(Exception, match="allow_outside_root must be true or false"):
        load("folder", root, allow_outside_root="yes")


def test_check_refuses_and_never_prints_file_bytes(tmp_path: Path) -> None:
    passwd = tmp_path / "elsewhere" / "passwd"
    passwd.parent.mkdir()
    passwd.write_text("root:x:0:0:root:/root:/bin/bash\n", encoding="utf-8")
    root = _folder(tmp_path / "data", ["../elsewhere/passwd,a"])
    report = check_dataset("folder", root)
    assert not report.ok and "leave the dataset root" in report.to_text()
    assert "root:x" not in report.to_text()
    result = CliRunner().invoke(app, ["datasets", "check", "folder", "--root", str(root)])
    assert result.exit_code != 0 and "root:x" not in result.output


def test_check_names_a_non_image_without_its_bytes(tmp_path: Path) -> None:
    root = _folder(tmp_path / "data", ["notes.png,a"])
    (root / "notes.png").write_text("root:x:0:0:secret\n", encoding="utf-8")
    report = check_dataset("folder", root)
    text = report.to_text()
    assert "notes.png" in text and "not_an_image" in text and "root:x" not in text


def test_isic_name_and_its_downsampled_alias_are_one_image(tmp_path: Path) -> None:
    from crsbench.datasets.synthetic import resolve_size, write_isic2019

    root = write_isic2019(tmp_path / "isic", size=resolve_size({"isic2019": 16, "side": 32}))
    gt = root / "ISIC_2019_Training_GroundTruth.csv"
    lines = gt.read_text(encoding="utf-8").splitlines()
    name, rest = lines[1].split(",", 1)
    flipped = rest.replace("1.0", "X").replace("0.0", "1.0", 1).replace("X", "0.0")
    lines.append(f"{name}_downsampled,{flipped}")
    gt.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as err:
        load("isic2019", root)
    text = str(err.value)
    assert "_downsampled" in text and "must be unique" in text and repr(name) in text
    assert f"data rows 1, {len(lines) - 1}" in text
