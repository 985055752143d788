"""NIH ChestX-ray14 and PadChest adapters on tiny copies of their real layouts."""

from __future__ import annotations

import numpy as np
import pytest

from crsbench.core.errors import DataError
from crsbench.datasets import check, load
from crsbench.datasets.chexpert import CHEXPERT_LABELS

COL = {name: j for j, name in enumerate(CHEXPERT_LABELS)}
NIH_ROWS = [
    ("00000001_000.png", "Effusion|Mass", "1", "PA"),
    ("00000001_001.png", "No Finding", "1", "AP"),
    ("00000002_000.png", "Infiltration|Hernia", "2", "PA"),
    ("00000003_000.png", "Pleural_Thickening", "3", "LL"),
]


def test_nih_labels_by_hand_paths_splits_and_metadata(tmp_path, shift):
    data = load("nih_cxr14", shift.nih(tmp_path, NIH_ROWS))
    assert list(data.image_ids) == ["00000001_000.png", "00000001_001.png", "00000002_000.png"]
    row = data.labels[0]  # Effusion|Mass
    assert row[COL["Pleural Effusion"]] == 1 and row[COL["Lung Lesion"]] == 1
    assert row[COL["No Finding"]] == 0 and row[COL["Cardiomegaly"]] == 0
    assert data.labels[1, COL["No Finding"]] == 1 and np.nansum(data.labels[1]) == 1
    assert (
        data.labels[2, COL["Lung Opacity"]] == 1 and np.nansum(data.labels[2]) == 1
    )  # Hernia ignored
    for name in ("Enlarged Cardiomediastinum", "Fracture", "Support Devices"):
        assert np.isnan(data.labels[:, COL[name]]).all() and name not in data.provided_label_names
    assert data.paths[0].endswith("images_001/images/00000001_000.png")
    assert data.paths[1].endswith("images_002/images/00000001_001.png")
    assert list(data.groups) == ["1", "1", "2"]
    assert list(data.metadata["official_split"]) == ["train", "train", "test"]
    assert list(data.metadata["age"]) == [45, 45, 45] and data.metadata["sex"][0] == "Male"
    assert len(load("nih_cxr14", tmp_path, frontal_only=False)) == 4
    from crsbench.datasets.eval_rows import shift_eval_rows

    assert list(shift_eval_rows(data, "official_test")) == [2]


def test_nih_without_split_lists_has_no_official_split(tmp_path, shift):
    data = load("nih_cxr14", shift.nih(tmp_path, NIH_ROWS, lists=False))
    assert "official_split" not in data.metadata.columns
    assert any("no train_val_list.txt" in n for n in data.notes)


def test_nih_unknown_finding_names_file_row_and_value(tmp_path, shift):
    rows = [*NIH_ROWS[:2], ("00000002_000.png", "Effusion|Efusion", "2", "PA")]
    with pytest.raises(DataError) as info:
        load("nih_cxr14", shift.nih(tmp_path, rows))
    text = str(info.value)
    assert "Data_Entry_2017_v2020.csv" in text and "'Finding Labels'" in text
    assert "'Efusion'" in text and "data row 3 (line 4)" in text and "nih_cxr14_v1.yaml" in text


def test_nih_missing_column_duplicate_id_and_missing_image(tmp_path, shift):
    root = shift.nih(tmp_path, NIH_ROWS)
    csv = root / "Data_Entry_2017_v2020.csv"
    good = csv.read_text()
    csv.write_text(good.replace("View Position", "View"))
    with pytest.raises(
        DataError, match=r"Data_Entry_2017_v2020.csv: column 'View Position' absent"
    ):
        load("nih_cxr14", root)
    csv.write_text(good.replace("00000001_001.png", "00000001_000.png"))
    with pytest.raises(DataError, match=r"'Image Index' must be unique.*data rows 1, 2"):
        load("nih_cxr14", root, frontal_only=False)
    csv.write_text(good)
    (root / "images_002" / "images" / "00000001_001.png").unlink()
    with pytest.raises(
        DataError, match=r"1 of 3 images listed in .*Data_Entry.*row 2: .*00000001_001.png"
    ):
        load("nih_cxr14", root)
    report = check("nih_cxr14", root)
    assert not report.ok and report.problem_counts == {"missing": 1}


PC_ROWS = [
    ("a_00-001-001.png", "p1", "PA", "['pleural effusion', ' NSG tube']"),
    ("a_00-001-002.png", "p1", "L", "['normal']"),
    ("b_00-002-001.png", "p2", "AP_horizontal", "['Normal']"),
    ("c_00-003-001.png", "p3", "PA", "['aortic elongation', 'callus rib fracture', '']"),
    ("d_00-004-001.png", "p4", "PA", "[]"),
]


def test_padchest_labels_by_hand_views_and_unlabelled_rows(tmp_path, shift):
    data = load("padchest", shift.padchest(tmp_path, PC_ROWS))
    assert list(data.image_ids) == ["a_00-001-001.png", "b_00-002-001.png", "c_00-003-001.png"]
    first = data.labels[0]
    assert first[COL["Pleural Effusion"]] == 1 and first[COL["Support Devices"]] == 1
    assert np.nansum(first) == 2 and data.labels[1, COL["No Finding"]] == 1  # 'Normal': any case
    assert data.labels[2, COL["Fracture"]] == 1 and np.nansum(data.labels[2]) == 1
    assert not np.isnan(data.labels).any()  # PadChest provides all 14
    assert data.paths[0].endswith("/0/a_00-001-001.png") and list(data.groups) == ["p1", "p2", "p3"]
    assert data.metadata["age"].tolist() == [65, 65, 65] and data.metadata["sex"][0] == "Female"
    assert any("dropped 1 row(s) without labels" in n for n in data.notes)
    assert "official_split" not in data.metadata.columns
    assert list(data.metadata["view"]) == ["PA", "AP", "PA"]  # AP_horizontal is a supine AP
    assert data.metadata["projection"][1] == "AP_horizontal"
    from crsbench.datasets.eval_rows import shift_eval_rows

    assert list(shift_eval_rows(data, "all_frontal")) == [0, 1, 2]
    with pytest.raises(DataError, match="has no official split"):
        shift_eval_rows(data, "official_test")


def test_padchest_unknown_finding_and_malformed_list(tmp_path, shift):
    rows = [*PC_ROWS[:2], ("e.png", "p5", "PA", "['pleural efusion']")]
    with pytest.raises(DataError) as info:
        load("padchest", shift.padchest(tmp_path / "a", rows))
    text = str(info.value)
    assert "PADCHEST_chest_x_ray" in text and "'Labels'" in text and "'pleural efusion'" in text
    assert "data row 3" in text
    rows = [*PC_ROWS[:2], ("e.png", "p5", "PA", "pleural effusion")]
    with pytest.raises(DataError, match=r"'Labels' must be a list literal.*data row 3"):
        load("padchest", shift.padchest(tmp_path / "b", rows))


def test_padchest_missing_images_skipped_within_the_bound_else_named(tmp_path, shift):
    root = shift.padchest(tmp_path, PC_ROWS)
    (root / "0" / "b_00-002-001.png").unlink()
    with pytest.raises(
        DataError, match=r"1 of 3 images are missing.*b_00-002-001.png.*data rows 3"
    ):
        load("padchest", root)
    data = load("padchest", root, max_missing_fraction=0.5)
    assert len(data) == 2 and any("1 row(s) whose image is missing" in n for n in data.notes)


def test_padchest_known_bad_rows_skipped_and_duplicates_refused(tmp_path, shift):
    bad = "216840111366964012819207061112010307142602253_04-014-084.png"
    root = shift.padchest(tmp_path, [*PC_ROWS[:1], (bad, "p9", "PA", "['normal']")])
    data = load("padchest", root)
    assert bad not in data.image_ids and any("known missing/unreadable" in n for n in data.notes)
    assert bad in load("padchest", root, skip_known_bad=False).image_ids
    dup = shift.padchest(tmp_path / "dup", [PC_ROWS[0], PC_ROWS[0]])
    with pytest.raises(DataError, match=r"'ImageID' must be unique"):
        load("padchest", dup)


def test_padchest_16bit_png_probes_and_a_truncated_one_is_reported(tmp_path, shift):
    root = shift.padchest(tmp_path, PC_ROWS)
    assert check("padchest", root, decode=True).ok
    path = root / "0" / "a_00-001-001.png"
    path.write_bytes(path.read_bytes()[:-20])
    report = check("padchest", root)
    assert report.problem_counts == {"truncated": 1}
