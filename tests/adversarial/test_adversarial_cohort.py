"""Bad cohorts get a named answer (file, row, column, what to do) and nothing is written."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.cohort.checks import CohortError, check_split_classes
from crsbench.cohort.profile import _load
from crsbench.cohort.spec import CohortSpec
from crsbench.testing.cohort import write_cohort


def _profile(tmp_path: Path, csv: Path, images: Path, *extra: str) -> tuple[int, str, Path]:
    out = tmp_path / "out"
    args = [
        "profile",
        "--data",
        str(csv),
        "--images",
        str(images),
        "--encoders",
        "pixel",
        "--out",
        str(out),
        *extra,
    ]
    result = CliRunner().invoke(app, args)
    return result.exit_code, _flat(result.output), out


def _flat(text: str) -> str:
    """Without whitespace: the console folds long paths anywhere."""
    return "".join(str(text).split())


def _edit(csv: Path, row: int, column: str, value: str) -> None:
    lines = csv.read_text().splitlines()
    header = lines[0].split(",")
    cells = lines[row + 1].split(",")
    cells[header.index(column)] = value
    lines[row + 1] = ",".join(cells)
    csv.write_text("\n".join(lines) + "\n")


@pytest.fixture
def cohort(tmp_path: Path) -> tuple[Path, Path]:
    return write_cohort(tmp_path / "data", 60, images_per_patient=1)


def test_a_class_outside_the_allowed_set(tmp_path: Path, cohort) -> None:
    csv, images = cohort
    _edit(csv, 7, "diagnosis", "malignnt")
    code, text, out = _profile(
        tmp_path,
        csv,
        images,
        "--group-column",
        "patient",
        "--label-columns",
        "diagnosis",
        "--classes",
        "benign,malignant,unclear",
    )
    assert code == 2 and not out.exists()
    assert _flat(str(csv)) in text and _flat("'diagnosis'") in text and _flat("'malignnt'") in text
    assert _flat("data row 8 (line 9)") in text and _flat("What to do:") in text


def test_a_multilabel_cell_that_is_not_0_or_1(tmp_path: Path) -> None:
    csv, images = write_cohort(tmp_path / "data", 60, multilabel=True, images_per_patient=1)
    _edit(csv, 3, "nodule", "2")
    code, text, out = _profile(tmp_path, csv, images, "--label-columns", "effusion,nodule")
    assert code == 2 and not out.exists()
    assert (
        _flat("'nodule'") in text
        and _flat("'2'") in text
        and _flat("data row 4") in text
        and _flat("What to do:") in text
    )


def test_a_patient_with_conflicting_labels(tmp_path: Path) -> None:
    csv, images = write_cohort(tmp_path / "data", 60, images_per_patient=2)
    lines = csv.read_text().splitlines()
    row = next(i for i, line in enumerate(lines[1:]) if line.startswith("p0003_1"))
    _edit(csv, row, "diagnosis", "malignant")  # patient P0003 (class 0) is benign
    code, text, out = _profile(
        tmp_path, csv, images, "--label-columns", "diagnosis", "--group-column", "patient"
    )
    assert code == 2 and not out.exists()
    assert (
        _flat("patient 'P0003'") in text
        and _flat("'patient'") in text
        and _flat("conflicting labels") in text
    )
    assert _flat(f"data row {row + 1}") in text and _flat("--labels-per-image") in text
    code, text, _ = _profile(
        tmp_path,
        csv,
        images,
        "--label-columns",
        "diagnosis",
        "--group-column",
        "patient",
        "--labels-per-image",
        "--encoders",
        "no_such_encoder",
    )  # past the conflict check, stopped later
    assert _flat("conflicting") not in text


def test_too_few_patients_of_a_class(tmp_path: Path, cohort) -> None:
    csv, images = cohort
    lines = csv.read_text().splitlines()
    keep = [lines[0]] + [x for x in lines[1:] if not x.endswith(",unclear")]
    keep += [x for x in lines[1:] if x.endswith(",unclear")][:2]
    csv.write_text("\n".join(keep) + "\n")
    code, text, out = _profile(
        tmp_path, csv, images, "--label-columns", "diagnosis", "--group-column", "patient"
    )
    assert code == 2 and not out.exists()
    assert _flat("class 'unclear' of column 'diagnosis' is held by 2 patient(s)") in text
    assert _flat("What to do:") in text


def test_missing_and_unreadable_images_beyond_the_budget(tmp_path: Path, cohort) -> None:
    csv, images = cohort  # 60 images: a budget of 0
    (images / "p0004_0.png").unlink()
    (images / "p0009_0.png").write_bytes(b"not an image")
    code, text, out = _profile(tmp_path, csv, images, "--label-columns", "diagnosis")
    assert code == 2 and not out.exists()
    assert _flat("2 of 60 images are missing or unreadable") in text
    assert (
        _flat("data row 5 (line 6), column 'path'") in text
        and _flat("p0004_0.png (missing)") in text
    )
    assert _flat("p0009_0.png") in text and _flat("What to do:") in text


def test_a_class_absent_from_the_test_split(tmp_path: Path, cohort) -> None:
    csv, images = cohort
    spec = CohortSpec(data=csv, images=images, label_columns=("diagnosis",))
    ds, _ = _load(spec, None)
    cls = np.argmax(ds.labels, axis=1)
    rows = np.arange(len(ds))
    test = rows[(cls != 2) & (rows % 5 == 0)]  # no 'unclear' image in the test split
    rest = np.setdiff1d(rows, test)
    splits = SimpleNamespace(train=rest, val=rest, calib=rest, test=test)
    with pytest.raises(CohortError, match=r"class 'unclear' has no positive image in the test"):
        check_split_classes(ds, splits, csv, 20)
