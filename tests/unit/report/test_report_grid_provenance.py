"""The report names the cells the config excluded and the rows each shift was scored on."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from crsbench.cli.report_command import report_data
from crsbench.report.provenance import excluded_cells, shift_rows_sentences
from crsbench.report.sections import Writer, leaderboard, robustness
from crsbench.testing import simulate_runs, write_store

EXCLUDED = [{"encoder": "retfound", "dataset": "chexpert"}]


def _shift_rows(rows: str, n_images: int, n_patients: int) -> str:
    scored = {"rows": rows, "n_images": n_images, "n_patients": n_patients}
    return json.dumps({"n_eval": n_images, "shift_rows": scored})


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three encoders × three datasets less one excluded cell; shift rows with provenance."""
    runs = simulate_runs(n_encoders=12, datasets=("isic2019", "aptos2019", "chexpert"), seeds=2)
    runs = runs[runs["encoder"].isin(runs["encoder"].unique()[9:12])]  # 3 encoders
    assert "retfound" in set(runs["encoder"])
    runs = runs[~((runs["encoder"] == "retfound") & (runs["dataset"] == "chexpert"))].copy()
    runs["details"] = "{}"
    runs.loc[runs["condition"] == "shift", "details"] = _shift_rows("official_test", 1234, 456)
    path = tmp_path_factory.mktemp("grid") / "store"
    config = {"exclude_cells": EXCLUDED, "shifts": [{"source": "chexpert",
              "target": "mimic_cxr", "rows": "official_test"}]}  # fmt: skip
    write_store(runs.reset_index(drop=True), path, config=config)
    return path


def test_excluded_cells_come_from_the_stored_config() -> None:
    assert excluded_cells({"config_json": json.dumps({"exclude_cells": EXCLUDED})}) == [
        "retfound×chexpert"
    ]
    assert excluded_cells({"config_json": json.dumps({"exclude_cells": []})}) == []
    assert excluded_cells({}) == []


def test_one_sentence_per_shift_target_with_images_and_patients() -> None:
    runs = pd.DataFrame(
        {
            "condition": ["shift", "shift", "clean", "shift"],
            "regime": ["frozen"] * 4,
            "eval_dataset": ["mimic_cxr", "mimic_cxr", "chexpert", "mimic_cxr"],
            "details": [_shift_rows("official_test", 5159, 1873),
                        _shift_rows("official_test", 5158, 1873), "{}",
                        _shift_rows("official_test", 5159, 1873)],
        }
    )  # fmt: skip
    assert shift_rows_sentences(runs) == [
        "MIMIC-CXR shift evaluated on the official test split (5,158–5,159 images, 1,873 patients)."
    ]
    runs["details"] = [_shift_rows("all_frontal", 300, 90)] * 4
    assert shift_rows_sentences(runs[runs["condition"] == "shift"]) == [
        "MIMIC-CXR shift evaluated on all frontal images (every official split) "
        "(300 images, 90 patients)."
    ]
    runs["details"] = "{}"
    assert shift_rows_sentences(runs) == [
        "MIMIC-CXR shift: the store does not record which rows were scored."
    ]


def test_the_report_lists_the_excluded_cell_and_never_scores_it(store: Path, tmp_path) -> None:
    data = report_data(store, n_replicates=0)
    assert data.cells_excluded == ["retfound×chexpert"]
    assert data.cells_left_out == []  # excluded is not missing
    board = data.board.set_index("encoder")
    assert board.loc["retfound", "n_cells"] == 2
    assert set(board.drop(index="retfound")["n_cells"]) == {3}
    # the aggregate of the encoder is the mean over its own two cells (nothing imputed)
    own = data.cells[data.cells["encoder"] == "retfound"]
    assert board.loc["retfound", "CRS"] == pytest.approx(own["CRS"].mean())
    html = leaderboard(data, Writer(tmp_path)).render()
    assert "Cells excluded by the config" in html and "retfound×chexpert" in html


def test_the_robustness_section_says_which_rows_the_shift_scored(store: Path, tmp_path) -> None:
    data = report_data(store, n_replicates=0)
    assert data.shift_rows == [
        "MIMIC-CXR shift evaluated on the official test split (1,234 images, 456 patients)."
    ]
    html = robustness(data, Writer(tmp_path)).render()
    assert "MIMIC-CXR shift evaluated on the official test split (1,234 images, 456 patients)." in (
        html
    )
