"""``check`` and the ``crsbench datasets check`` command: bad files, bad labels, leaks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from PIL import Image, ImageFile
from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.core.errors import DataError
from crsbench.datasets import check
from crsbench.datasets.files import probe_image


def _png(path: Path, size: int = 64) -> bytes:
    Image.new("L", (size, size), 7).save(path)
    return path.read_bytes()


def test_probe_classifies_each_kind_of_bad_file(tmp_path: Path) -> None:
    good = tmp_path / "good.png"
    data = _png(good)
    jpeg = tmp_path / "good.jpg"
    Image.new("RGB", (64, 64), (1, 2, 3)).save(jpeg, quality=90)
    jdata = jpeg.read_bytes()
    cases = {
        "half.png": data[: len(data) // 2],
        "last.png": data[:-1],
        "half.jpg": jdata[: len(jdata) // 2],
        "cut99.jpg": jdata[: int(len(jdata) * 0.99)],
        "empty.jpg": b"",
        "html.jpg": b"<html><body>not found</body></html>",
    }
    for name, payload in cases.items():
        (tmp_path / name).write_bytes(payload)
    (tmp_path / "dir.jpg").mkdir()
    os.symlink(tmp_path / "gone.jpg", tmp_path / "dangling.jpg")
    assert probe_image(str(good)) is None and probe_image(str(jpeg), decode=True) is None
    kinds = {
        name: probe_image(str(tmp_path / name)) for name in [*cases, "dir.jpg", "dangling.jpg"]
    }
    assert kinds["half.png"][0] == kinds["last.png"][0] == "truncated"
    assert kinds["half.jpg"][0] == kinds["cut99.jpg"][0] == "truncated"
    assert kinds["empty.jpg"][0] == "empty"
    assert kinds["html.jpg"][0] == "not_an_image"
    assert kinds["dir.jpg"][0] == "not_a_file"
    assert kinds["dangling.jpg"][0] == "missing"
    # a full decode also catches a truncation the end-marker test is told to ignore
    cut = tmp_path / "cut_with_marker.png"
    cut.write_bytes(data[: len(data) // 2] + data[-12:])
    assert probe_image(str(cut), decode=True)[0] in {"truncated", "decode_error"}
    assert ImageFile.LOAD_TRUNCATED_IMAGES is False


def test_check_reports_bad_files_and_ok_flag(tmp_path: Path, writers) -> None:
    root = writers.isic(tmp_path, ["MEL", "NV", "BCC", "NV"])
    report = check("isic2019", root)
    assert report.ok and report.n_images == 4 and report.problem_counts == {}
    assert report.n_positive["NV"] == 2 and report.prevalence["NV"] == pytest.approx(0.5)
    assert report.split_counts == {"all": 4}
    assert any("'SCC' has no positive" in w for w in report.warnings)
    images = root / "ISIC_2019_Training_Input"
    data = (images / "ISIC_0000001.jpg").read_bytes()
    (images / "ISIC_0000001.jpg").write_bytes(data[: len(data) // 2])
    (images / "ISIC_0000002.jpg").write_bytes(b"")
    (images / "ISIC_0000003.jpg").unlink()
    report = check("isic2019", root)
    assert not report.ok
    assert report.problem_counts == {"truncated": 1, "empty": 1, "missing": 1}
    text = report.to_text()
    assert "FAILED" in text and "row 2:" in text and "ISIC_0000003.jpg" in text


def test_check_reports_label_errors_instead_of_raising(tmp_path: Path, writers) -> None:
    root = writers.aptos(tmp_path, [0, 1, 7])
    report = check("aptos2019", root)
    assert not report.ok and "data row 3" in report.errors[0] and report.n_images == 0


def test_check_chexpert_splits_policy_and_leaks(tmp_path: Path, writers) -> None:
    rows = [["1.0", "-1.0"] + [""] * 12, ["0.0", "1.0"] + [""] * 12] * 5
    root = writers.chexpert(tmp_path, rows, [["1.0"] + [""] * 13, ["0.0"] + [""] * 13])
    report = check("chexpert", root)
    assert report.ok and report.split_counts == {"train": 10, "valid": 2}
    assert report.n_masked["Enlarged Cardiomediastinum"] == 5
    assert (
        check("chexpert", root, uncertainty="ones").n_positive["Enlarged Cardiomediastinum"] == 10
    )
    valid = root / "CheXpert-v1.0-small" / "valid.csv"
    valid.write_text(valid.read_text().replace("patient00010/study1", "patient00000/study9"))
    (root / "CheXpert-v1.0-small/valid/patient00000/study9").mkdir(parents=True)
    (root / "CheXpert-v1.0-small/valid/patient00000/study9/view1_frontal.jpg").write_bytes(
        (root / "CheXpert-v1.0-small/valid/patient00010/study1/view1_frontal.jpg").read_bytes()
    )
    # the CheXpert policy keeps the patient whole (valid rows fix it to test): run accepts the
    # data, so check warns, naming the patient by the sha256 prefix of its id
    from crsbench.splits import hash_group

    report = check("chexpert", root)
    assert report.ok and report.leaked_groups == 1
    assert any(hash_group("patient00000") in w for w in report.warnings)


def test_check_refuses_exactly_what_run_refuses(tmp_path: Path, writers) -> None:
    from crsbench.datasets import load
    from crsbench.splits import make_splits

    cells = [["1.0", "0.0"] + [""] * 12, ["0.0", "1.0"] + [""] * 12]
    studies = [(10000000 + s, 50000000 + s, cells[s % 2]) for s in range(12)]
    studies.append((10000000, 50000099, cells[1]))
    splits = ["train"] * 8 + ["validate", "validate", "test", "test"]
    images = [(f"d{s}", 10000000 + s, 50000000 + s, "PA", splits[s]) for s in range(12)]
    images.append(("d99", 10000000, 50000099, "PA", "test"))  # subject 0: train and test ...
    images[0] = ("d0", 10000000, 50000000, "PA", "validate")  # ... now validate and test
    root = writers.mimic(tmp_path, studies, images)
    with pytest.raises(DataError) as refused:
        make_splits(load("mimic_cxr", root), seed=0)
    report = check("mimic_cxr", root)
    assert not report.ok and str(refused.value) in report.errors


def _flat(text: str) -> str:
    return " ".join(text.split())  # rich wraps long lines


def test_cli_check_exit_codes(tmp_path: Path, writers) -> None:
    runner = CliRunner()
    root = writers.aptos(tmp_path / "aptos", [0, 1, 2])
    result = runner.invoke(app, ["datasets", "check", "aptos2019", "--root", str(root)])
    assert result.exit_code == 0, result.output
    assert "OK" in _flat(result.output) and "3 images" in _flat(result.output)
    (root / "train_images" / "000000000001.png").write_bytes(b"\x89PNG\r\n\x1a\nbroken")
    result = runner.invoke(app, ["datasets", "check", "aptos2019", "--root", str(root)])
    assert result.exit_code == 1 and "truncated" in _flat(result.output)
    empty = tmp_path / "empty"
    empty.mkdir()
    result = runner.invoke(
        app, ["datasets", "check", "chexpert", "--root", str(empty), "--uncertainty", "zeros"]
    )
    assert result.exit_code == 1 and "must contain CheXpert" in _flat(result.output)
    result = runner.invoke(app, ["datasets", "check", "chexpert", "--root", str(tmp_path / "x")])
    assert result.exit_code == 1 and "existing directory" in _flat(result.output)
    result = runner.invoke(
        app, ["datasets", "check", "aptos2019", "--root", str(root), "-o", "bogus=1"]
    )
    assert result.exit_code == 2 and "unknown option 'bogus'" in _flat(result.output)
    result = runner.invoke(app, ["datasets", "list"])
    assert result.exit_code == 0 and "mimic_cxr" in _flat(result.output)
