"""``datasets check`` into a pipe prints lines and a TSV label table, like every command (#25)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.testing.cohort import write_cohort


def test_datasets_check_prints_tsv_into_a_pipe(tmp_path: Path) -> None:
    csv, images = write_cohort(tmp_path / "data", 30, images_per_patient=1)
    before = csv.read_bytes()
    r = CliRunner().invoke(app, ["datasets", "check", "folder", "--root", str(images),
                                 "-o", f"csv={csv}", "-o", "image_dir=.", "-o",
                                 "label_columns=diagnosis", "-o", "group_column=patient"])  # fmt: skip
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0].startswith("dataset folder at") and lines[0].endswith(": OK")
    assert not any(ch in r.output for ch in "┏┃━│└─")  # no box drawing in a pipe
    header = lines.index("label\tpositives\tmasked\tprevalence")
    assert lines[header + 1].split("\t") == ["benign", "10", "0", "0.3333"]
    assert len(lines[header + 1 : header + 4]) == 3 and "problem(s)" in lines[header + 4]
    assert csv.read_bytes() == before
