"""The cohort path has the benchmark config's protection (#25): each refusal names the file,
key or row, and nothing is written or changed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.cohort.artefact import (
    MODEL_JSON,
    ModelArtefact,
    _canonical,
    _sha256,
    load_model,
    save_model,
)
from crsbench.core.errors import DataError
from crsbench.testing.cohort import write_cohort

BOMB = "".join(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 13))


def _flat(text: str) -> str:
    return "".join(str(text).split())


def _cli(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(app, list(args))
    assert "Traceback" not in r.output
    return r.exit_code, _flat(r.output)


@pytest.fixture
def cohort(tmp_path: Path) -> tuple[Path, Path]:
    return write_cohort(tmp_path / "data", 60, images_per_patient=1)


def _profile(tmp_path: Path, csv: Path, images: Path, *extra: str) -> tuple[int, str, Path]:
    out = tmp_path / "out"
    code, text = _cli("profile", "--data", str(csv), "--images", str(images), "--encoders",
                      "pixel", "--out", str(out), "--label-columns", "diagnosis", *extra)  # fmt: skip
    return code, text, out


def _yaml(tmp_path: Path, csv: Path, images: Path, body: str) -> Path:
    path = tmp_path / "cohort.yaml"
    path.write_text(f"data: {csv}\nimages: {images}\nlabel_columns: diagnosis\n{body}")
    return path


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("label_columns: grade\n", "key 'label_columns' at line 4 is written twice (first at line 3)"),
        ("labels_per_image: \"false\"\n", "key 'labels_per_image' must be true or false (unquoted). Got 'false' (a string)"),
        ("max_images: \"50\"\n", "key 'max_images' must be an integer (unquoted). Got '50' (a string)"),
        ("batch_size: true\n", "key 'batch_size' must be an integer (unquoted). Got True"),
        ("l0: &l0 [x]\n" + BOMB, "more than 100 aliases"),
    ],
)  # fmt: skip
def test_cohort_yaml_goes_through_the_strict_loader(tmp_path, cohort, body, expected) -> None:
    csv, images = cohort
    before = csv.read_bytes()
    path = _yaml(tmp_path, csv, images, body)
    code, text = _cli("profile", "--config", str(path), "--out", str(tmp_path / "out"))
    assert code == 2 and _flat(expected) in text and _flat(str(path)) in text
    assert not (tmp_path / "out").exists() and csv.read_bytes() == before


def test_a_single_class_cohort_fails_at_the_checks(tmp_path: Path, cohort) -> None:
    csv, images = cohort
    lines = csv.read_text().splitlines()
    csv.write_text("\n".join([lines[0]] + [x for x in lines[1:] if x.endswith(",benign")]) + "\n")
    code, text, out = _profile(tmp_path, csv, images)
    assert code == 2 and not out.exists()
    assert (
        _flat(f"{csv}: column 'diagnosis' holds one class only ('benign' in all 20 rows)") in text
    )
    assert _flat("What to do:") in text


@pytest.mark.parametrize("marker", ["NA", "nan", "N/A", "null"])
def test_a_missing_value_marker_is_not_a_class(tmp_path: Path, cohort, marker: str) -> None:
    csv, images = cohort
    text = csv.read_text().replace("P0007,47,malignant", f"P0007,47,{marker}")
    assert f",{marker}\n" in text
    csv.write_text(text)
    code, out_text, out = _profile(tmp_path, csv, images)
    assert code == 2 and not out.exists() and csv.read_text() == text
    assert _flat("column 'diagnosis' must be a class (integer or name), not blank") in out_text
    assert _flat(f"Got '{marker}' instead at data row 8 (line 9)") in out_text


@pytest.mark.parametrize("cell", ["", "NA"])
def test_blank_patient_ids_are_not_one_patient(tmp_path: Path, cohort, cell: str) -> None:
    csv, images = cohort
    text = csv.read_text()
    for p in (3, 5):
        text = text.replace(f"p{p:04d}_0.png,P{p:04d},", f"p{p:04d}_0.png,{cell},")
    csv.write_text(text)
    code, out_text, out = _profile(tmp_path, csv, images, "--group-column", "patient")
    assert code == 2 and not out.exists()
    assert _flat("column 'patient' must be a patient id, not blank") in out_text
    assert _flat("data row 4 (line 5). 2 row(s) are bad in total (data rows 4, 6)") in out_text


def _model(folder: Path, n_features: int, name: str = "pixel") -> Path:
    from crsbench.encoders import build

    enc = build("pixel", device="cpu")
    rng = np.random.default_rng(0)
    model = ModelArtefact(
        encoder={"name": name, "weights_sha256": enc.weights_hash, "input_size": 64,
                 "working_size": 64, "precision": "fp32", "revision": "test"},
        task="multiclass", labels=["a", "b"], probe={"C": 1.0, "seed": 0},
        coef=rng.normal(size=(n_features, 2)), intercept=np.zeros(2),
        mean=np.zeros(n_features), scale=np.ones(n_features),
    )  # fmt: skip
    save_model(model, folder)
    return folder


def test_a_model_json_whose_n_features_differs_is_named(tmp_path: Path) -> None:
    folder = _model(tmp_path / "model", 5)
    doc = json.loads((folder / MODEL_JSON).read_text())
    doc["probe"]["n_features"] = 7
    doc["checksum"] = _sha256(_canonical(doc))  # a consistent edit: the checksum passes
    (folder / MODEL_JSON).write_text(json.dumps(doc))
    with pytest.raises(DataError) as err:
        load_model(folder)
    assert f"{folder / MODEL_JSON}: probe.n_features is 7, but probe.coef has 5 rows" in str(
        err.value
    )


def test_predict_with_a_model_of_another_width_is_named(tmp_path: Path, cohort) -> None:
    _, images = cohort
    folder = _model(tmp_path / "model", 5)
    out = tmp_path / "pred.csv"
    code, text = _cli("predict", "--model", str(folder), "--images", str(images), "--out", str(out))
    assert code == 2 and not out.exists()
    assert _flat("encoder 'pixel' gives") in text
    assert _flat("the model's probe takes 5 (n_features in model.json)") in text


def test_predict_on_a_folder_where_nothing_decodes_names_it(tmp_path: Path) -> None:
    folder = _model(tmp_path / "model", 5)
    bad = tmp_path / "bad"
    bad.mkdir()
    for i in range(3):
        (bad / f"x{i}.png").write_bytes(b"not an image")
    out = tmp_path / "pred.csv"
    code, text = _cli("predict", "--model", str(folder), "--images", str(bad), "--out", str(out))
    assert code == 2 and not out.exists()
    assert _flat(f"{bad}: none of its 3 image(s) could be decoded; first: {bad / 'x0.png'}") in text
    assert sorted(p.name for p in bad.iterdir()) == ["x0.png", "x1.png", "x2.png"]
