"""The report's verdict, pretraining-overlap and weight sections on the small synthetic store."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from crsbench.cli.report_command import report_data


def _section(html: str, sid: str) -> str:
    return re.search(rf'<section id="{sid}">(.*?)</section>', html, flags=re.S).group(1)


def test_first_screen_answers_the_questions(small_report: Path) -> None:
    html = small_report.read_text(encoding="utf-8")
    assert html.index('<section id="at-a-glance">') < html.index('<section id="leaderboard">')
    body = _section(html, "at-a-glance")
    for question in ("Which encoder should I pick?", "Which is most robust to JPEG?",
                     "Which keeps its calibration under shift?"):  # fmt: skip
        assert question in body
    verdict = pd.read_csv(small_report.parent / "tables" / "at_a_glance.csv")
    assert set(verdict["dataset"]) == {"isic2019", "aptos2019", "chexpert", "chexpert→mimic_cxr"}
    assert set(verdict["interval"]) == {"seed-only"}
    for leader in verdict["leader"]:
        assert leader in body


def test_overlap_and_weights_sections(small_report: Path) -> None:
    html = small_report.read_text(encoding="utf-8")
    assert "pretrain overlap" in _section(html, "leaderboard")
    overlap = _section(html, "pretraining-overlap")
    # nothing flagged on this store: one line instead of two identical tables (CSV kept)
    assert "No shift result is flagged" in overlap and "<table" not in overlap
    weights = _section(html, "weights")
    assert "Pareto front" in weights and "weights_pareto" in weights
    tables = small_report.parent / "tables"
    for name in ("pretraining_overlap", "shift_welch_without_flagged", "weight_sensitivity",
                 "pareto_front", "external_validity_shift_without_flagged"):  # fmt: skip
        assert (tables / f"{name}.csv").is_file(), name
    sweep = pd.read_csv(tables / "weight_sensitivity.csv")
    for _, part in sweep.groupby("region"):
        assert part["share_first"].sum() == pytest.approx(1.0)


def test_board_marks_flagged_encoders(tmp_path: Path) -> None:
    from crsbench.report.beyond_data import compute_beyond
    from crsbench.testing import simulate_runs, write_store

    df = simulate_runs(n_encoders=15, datasets=("chexpert",), seeds=2)
    df = df[df["encoder"].isin(["rad_dino", "mae", "resnet50"])]
    write_store(df, tmp_path / "s")
    d = report_data(tmp_path / "s", n_replicates=20)
    b = compute_beyond(d)
    marks = d.board.set_index("encoder")["pretraining_overlap"]
    assert marks["rad_dino"] == "chexpert (trained on); shift target mimic_cxr (trained on)"
    assert marks["mae"] == "" and marks["resnet50"] == ""
    assert b.flags.set_index("encoder").loc["rad_dino", "flagged"]
