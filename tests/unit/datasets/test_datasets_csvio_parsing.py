"""CSV reading helpers: header drift, gzip, error messages, tri-state parsing."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from crsbench.core.errors import DataError
from crsbench.datasets.csvio import TRISTATE_CELLS, apply_uncertainty, parse_cells, read_csv

CLEAN = "id,a,b\nx1,1.0,\nx2,-1.0,0.0\n"


@pytest.mark.parametrize(
    "variant",
    [
        "\ufeff" + CLEAN,
        CLEAN.replace("\n", "\r\n"),
        "b,id,a\n,x1,1.0\n0.0,x2,-1.0\n",
        "id,a,b,\nx1,1.0,,\nx2,-1.0,0.0,\n",  # trailing delimiter everywhere
        "id,a,b\nx1,1.0,,\nx2,-1.0,0.0,\n",  # trailing delimiter on data rows only
        " id , a ,b\nx1,1.0,\nx2,-1.0,0.0\n",
    ],
)
def test_header_drift_parses_like_the_clean_file(tmp_path: Path, variant: str) -> None:
    clean, drifted = tmp_path / "clean.csv", tmp_path / "drifted.csv"
    clean.write_text(CLEAN, newline="")
    drifted.write_bytes(variant.encode())
    reference = read_csv(clean, ["id", "a", "b"])
    frame = read_csv(drifted, ["id", "a", "b"])
    pd.testing.assert_frame_equal(frame[["id", "a", "b"]], reference)
    assert set(frame.columns) == {"id", "a", "b"}


def test_gzip_with_bom(tmp_path: Path) -> None:
    path = tmp_path / "x.csv.gz"
    path.write_bytes(gzip.compress(("\ufeff" + CLEAN).encode()))
    frame = read_csv(path, ["id", "a", "b"])
    assert frame["id"].tolist() == ["x1", "x2"] and frame["b"].tolist() == ["", "0.0"]


def test_parse_cells_matches_a_per_cell_reference() -> None:
    rng = np.random.default_rng(3)
    cells = np.array(["1.0", "0.0", "-1.0", "", "1", " 0 ", "-1"])[rng.integers(0, 7, (500, 3))]
    frame = pd.DataFrame(cells, columns=["p", "q", "r"])
    got = apply_uncertainty(
        parse_cells(frame, ["p", "q", "r"], TRISTATE_CELLS, Path("f.csv")), "ignore"
    )
    expected = np.array(
        [[np.nan if float(c or 0) == -1 else float(c or 0) for c in row] for row in cells]
    )
    np.testing.assert_array_equal(got, expected)


def test_bad_cells_message_and_count(tmp_path: Path) -> None:
    frame = pd.DataFrame({"p": ["1.0", "yes", "0.0", "2", "yes"]})
    with pytest.raises(DataError) as info:
        parse_cells(frame, ["p"], TRISTATE_CELLS, tmp_path / "labels.csv")
    message = str(info.value)
    assert "labels.csv" in message and "column 'p'" in message and "Got 'yes' instead" in message
    assert "data row 2 (line 3)" in message and "3 row(s) are bad" in message
    assert "data rows 2, 4, 5" in message


def test_missing_empty_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="is missing"):
        read_csv(tmp_path / "none.csv", ["id"])
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(DataError, match="is empty"):
        read_csv(tmp_path / "empty.csv", ["id"])
    (tmp_path / "bad.csv").write_bytes(b"id,a\n\xff\xfe,1\n")
    with pytest.raises(DataError, match="bad.csv"):
        read_csv(tmp_path / "bad.csv", ["id"])
