"""CheXpert adapter: uncertainty policies, path resolution, header drift, bad inputs, speed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from crsbench.core.errors import ConfigError, DataError
from crsbench.datasets import DATASETS, load

POS, NEG, UNC, BLANK = "1.0", "0.0", "-1.0", ""


def _row(*cells: str) -> list[str]:
    """14 label cells: the given ones first, the rest blank."""
    return [*cells, *([BLANK] * (14 - len(cells)))]


@pytest.fixture
def small(tmp_path: Path, writers) -> Path:
    train = [_row(POS, UNC, NEG), _row(UNC, BLANK, POS), _row(NEG, NEG, UNC)]
    valid = [_row(POS, NEG, NEG)]
    return writers.chexpert(tmp_path, train, valid)


@pytest.mark.parametrize(("policy", "fill"), [("ignore", np.nan), ("zeros", 0.0), ("ones", 1.0)])
def test_uncertainty_policy_sets_exactly_the_uncertain_cells(small: Path, policy, fill) -> None:
    data = load("chexpert", small, uncertainty=policy)
    uncertain = np.zeros((4, 14), dtype=bool)
    uncertain[0, 1] = uncertain[1, 0] = uncertain[2, 2] = True
    if policy == "ignore":
        np.testing.assert_array_equal(np.isnan(data.labels), uncertain)
    else:
        assert not np.isnan(data.labels).any()
        np.testing.assert_array_equal(data.labels[uncertain], fill)
    # blanks are negatives, explicit values kept
    assert data.labels[1, 1] == 0.0 and data.labels[0, 13] == 0.0
    assert data.labels[0, 0] == 1.0 and data.labels[1, 2] == 1.0 and data.labels[2, 0] == 0.0


def test_revision_changes_with_policy_and_label_bytes(small: Path) -> None:
    a = load("chexpert", small).revision
    assert a == load("chexpert", small, check_files=False).revision
    assert a != load("chexpert", small, uncertainty="zeros").revision
    csv = small / "CheXpert-v1.0-small" / "valid.csv"
    csv.write_text(csv.read_text().replace("1.0,0.0,0.0", "0.0,0.0,0.0", 1))
    assert load("chexpert", small).revision != a


def test_fields_groups_split_and_paths(small: Path) -> None:
    data = load("chexpert", small)
    assert len(data) == 4 and data.task == "multilabel" and data.labels.shape == (4, 14)
    assert list(data.metadata["official_split"]) == ["train", "train", "train", "valid"]
    assert list(data.groups) == ["patient00000", "patient00001", "patient00002", "patient00003"]
    assert data.image_ids[0] == "train/patient00000/study1/view1_frontal.jpg"
    assert all(Path(p).is_file() and Path(p).is_absolute() for p in data.paths)
    assert data.metadata["sex"].iloc[0] == "Female" and data.metadata["age"].iloc[1] == 41
    assert DATASETS.get("chexpert").card.label_names == data.label_names
    with pytest.raises(DataError, match="multiclass"):
        data.class_indices()
    assert not data.labels.flags.writeable


@pytest.mark.parametrize("folder", ["CheXpert-v1.0", "CheXpert-v1.0-small"])
@pytest.mark.parametrize("prefix", ["CheXpert-v1.0", "CheXpert-v1.0-small"])
def test_paths_resolve_whatever_the_folder_and_prefix(tmp_path, writers, folder, prefix) -> None:
    root = writers.chexpert(tmp_path, [_row(POS)], [_row(NEG)], folder=folder, path_prefix=prefix)
    for where in (root, root / folder):
        data = load("chexpert", where)
        assert all(Path(p).is_file() for p in data.paths)
        assert str(root / folder) in data.paths[0]


def test_windows_separators_resolve(tmp_path: Path, writers) -> None:
    root = writers.chexpert(tmp_path, [_row(POS)], [_row(NEG)])
    csv = root / "CheXpert-v1.0-small" / "train.csv"
    lines = csv.read_text().splitlines()
    lines[1] = lines[1].replace("/", "\\", 4)
    csv.write_text("\n".join(lines) + "\n")
    assert "\\" in csv.read_text()
    data = load("chexpert", root)
    assert data.image_ids[0] == "train/patient00000/study1/view1_frontal.jpg"


def test_frontal_only_filters_laterals(tmp_path: Path, writers) -> None:
    views = ["Frontal", "Lateral", "Frontal"]
    root = writers.chexpert(tmp_path, [_row(POS), _row(NEG)], [_row(POS)], views=views)
    assert len(load("chexpert", root)) == 2
    data = load("chexpert", root, frontal_only=False)
    assert list(data.metadata["view"]) == views


def test_header_drift_bom_crlf_reordered_parse_the_same(small: Path) -> None:
    reference = load("chexpert", small)
    csv = small / "CheXpert-v1.0-small" / "train.csv"
    rows = [line.split(",") for line in csv.read_text().splitlines()]
    order = list(reversed(range(len(rows[0]))))
    drifted = "\r\n".join(",".join(r[i] for i in order) for r in rows) + "\r\n"
    csv.write_bytes(b"\xef\xbb\xbf" + drifted.encode())
    data = load("chexpert", small)
    np.testing.assert_array_equal(data.labels, reference.labels)
    np.testing.assert_array_equal(data.image_ids, reference.image_ids)
    assert data.metadata.equals(reference.metadata)


@pytest.mark.parametrize("bad", ["2", "yes", "0.5", "nan"])
def test_out_of_domain_label_names_file_row_column_value(tmp_path, writers, bad) -> None:
    root = writers.chexpert(tmp_path, [_row(POS), _row(NEG, NEG, bad), _row(bad)], [_row(NEG)])
    with pytest.raises(DataError) as info:
        load("chexpert", root)
    message = str(info.value)
    assert "train.csv" in message and repr(bad) in message
    if bad == "2":  # first bad cell in column order is Enlarged... (row 3) then Cardiomegaly
        assert "'No Finding'" in message and "data row 3" in message
    assert "row(s) are bad" in message


def test_missing_column_duplicate_column_and_missing_images(tmp_path, writers) -> None:
    root = writers.chexpert(tmp_path, [_row(POS), _row(NEG)], [_row(NEG)])
    csv = root / "CheXpert-v1.0-small" / "valid.csv"
    original = csv.read_text()
    csv.write_text(original.replace("Pleural Effusion", "Pleural Efusion"))
    with pytest.raises(DataError, match="'Pleural Effusion' absent.*Did you mean"):
        load("chexpert", root)
    csv.write_text(original.replace("Edema", "Cardiomegaly"))
    with pytest.raises(DataError, match="'Cardiomegaly' appears 2 times"):
        load("chexpert", root)
    csv.write_text(original)
    for p in (root / "CheXpert-v1.0-small" / "train").rglob("*.jpg"):
        p.unlink()
    with pytest.raises(DataError, match=r"2 of 3 images .* missing.*row 1: .*row 2: "):
        load("chexpert", root)
    assert len(load("chexpert", root, check_files=False)) == 3


def test_root_errors_and_unknown_options(tmp_path: Path, writers) -> None:
    with pytest.raises(DataError, match="existing directory"):
        load("chexpert", tmp_path / "nope")
    with pytest.raises(DataError, match="must contain CheXpert-v1.0"):
        load("chexpert", tmp_path)
    writers.chexpert(tmp_path / "data", [_row(POS)], [_row(NEG)])
    with pytest.raises(DataError, match=r"Found neither\. Did you mean root=.*data'\?"):
        load("chexpert", tmp_path)  # one level too high
    with pytest.raises(DataError, match="must contain CheXpert-v1.0"):
        load("chexpert", tmp_path / "data" / "CheXpert-v1.0-small" / "train")  # too low
    with pytest.raises(ConfigError, match="Did you mean: uncertainty"):
        load("chexpert", tmp_path / "data", uncertanity="zeros")
    with pytest.raises(ConfigError, match="uncertainty must be one of"):
        load("chexpert", tmp_path / "data", uncertainty="maybe")


def test_empty_and_duplicate_paths(tmp_path: Path, writers) -> None:
    root = writers.chexpert(tmp_path, [_row(POS)], [_row(NEG)])
    csv = root / "CheXpert-v1.0-small" / "train.csv"
    header = csv.read_text().splitlines()[0]
    csv.write_text(header + "\n")
    with pytest.raises(DataError, match="no data rows"):
        load("chexpert", root)
    valid = (root / "CheXpert-v1.0-small" / "valid.csv").read_text().splitlines()
    csv.write_text("\n".join([header, valid[1]]) + "\n")
    with pytest.raises(DataError, match="must be unique across train.csv and valid.csv"):
        load("chexpert", root)


def _write_big_chexpert(root: Path, n: int) -> None:
    rng = np.random.default_rng(0)
    base = root / "CheXpert-v1.0-small"
    base.mkdir(parents=True)
    cells = np.array(["1.0", "0.0", "-1.0", ""])[rng.integers(0, 4, size=(n, 14))]
    patient = np.arange(n) // 3
    paths = np.char.add(
        np.char.add("CheXpert-v1.0-small/train/patient", np.char.zfill(patient.astype(str), 5)),
        np.char.add(
            "/study", np.char.add((np.arange(n) % 3 + 1).astype(str), "/view1_frontal.jpg")
        ),
    )
    views = np.where(rng.random(n) < 0.85, "Frontal", "Lateral")
    header = "Path,Sex,Age,Frontal/Lateral,AP/PA," + ",".join(
        ["No Finding", "Enlarged Cardiomediastinum", "Cardiomegaly", "Lung Opacity",
         "Lung Lesion", "Edema", "Consolidation", "Pneumonia", "Atelectasis", "Pneumothorax",
         "Pleural Effusion", "Pleural Other", "Fracture", "Support Devices"]
    )  # fmt: skip
    body = [
        ",".join([p, "Male", "60", v, "AP", *c])
        for p, v, c in zip(paths, views, cells, strict=True)
    ]
    (base / "train.csv").write_text(header + "\n" + "\n".join(body) + "\n")
    (base / "valid.csv").write_text(
        header + "\n" + "CheXpert-v1.0-small/valid/patient99999/study1/view1_frontal.jpg,"
        "Male,60,Frontal,AP," + ",".join(["0.0"] * 14) + "\n"
    )


def test_full_size_label_file_parses(tmp_path: Path) -> None:
    """Every frontal row of a full-size label file (223,414 rows) is read; how long it takes is
    measured by ``benchmarks/timings.py``."""
    n = 223_414
    _write_big_chexpert(tmp_path, n)
    data = load("chexpert", tmp_path, check_files=False)
    expected = (
        sum(
            1
            for line in (tmp_path / "CheXpert-v1.0-small" / "train.csv").read_text().splitlines()
            if ",Frontal," in line
        )
        + 1
    )
    assert len(data) == expected
