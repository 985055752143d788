"""The report of a synthetic store: sections, figures, tables, self-containment, values."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

SECTION_IDS = (
    "in-short", "at-a-glance", "leaderboard", "your-weights", "profiles", "rank-shift", "uncertainty", "calibration",
    "label-efficiency", "robustness", "layer-depth", "control-probes", "pretraining-overlap",
    "weights", "subgroups", "operating-points", "flips", "provenance",
)  # fmt: skip
FULL_FIGURES = (
    "profiles", "rank_shift", "uncertainty", "calibration_cell", "recalibration",
    "label_efficiency", "robustness", "shift", "shift_drop", "layer_depth", "weights_pareto",
)  # fmt: skip


def _sections(html: str) -> dict[str, str]:
    parts = re.findall(r'<section id="([^"]+)">(.*?)</section>', html, flags=re.S)
    return dict(parts)


def _png_std(path: Path) -> float:
    from PIL import Image

    with Image.open(path) as im:
        return float(np.asarray(im.convert("L"), dtype=float).std())


def test_every_section_present_with_reading_guide(small_report: Path) -> None:
    html = small_report.read_text(encoding="utf-8")
    found = _sections(html)
    assert tuple(found) == SECTION_IDS
    for sid, body in found.items():
        lede = re.search(r'<p class="lede">([^<]+)</p>', body)
        assert lede is not None and len(lede.group(1)) > 40, sid
    # the simulated store has data for every analysis; it lacks only the optional
    # reliability bins, the per-sample predictions (so the intervals fall back to seed-only,
    # said under the leaderboard and in section 4) and the control probes' rows other than
    # clean full-label ones (so their CRS is not computed); the real writer wrote its meta
    # table, so no note on it
    notes = re.findall(r'<p class="note">([^<]*)</p>', html)
    fallback = [n for n in notes if "seed-only bootstrap because this store has no" in n]
    assert len(fallback) == 2
    no_preds = [n for n in notes if "predictions for any complete cell" in n]
    assert len(no_preds) == 3  # sections 12-14 say so
    # written without the plan table: one note under the leaderboard says so
    no_plan = [n for n in notes if n.startswith("This results store has no &#x27;plan&#x27;")]
    assert len(no_plan) == 1
    notes = [n for n in notes if n not in fallback and n not in no_preds and n not in no_plan]
    assert len(notes) == 3
    assert "reliability" in notes[0] and not any("meta table" in n for n in notes)
    for note, probe in zip(notes[1:3], ("kNN", "MLP"), strict=True):
        assert note.startswith(f"{probe}: axes computed from its own rows: auroc, ece.")


def test_no_figure_is_empty(small_report: Path) -> None:
    fig_dir = small_report.parent / "figures"
    for name in FULL_FIGURES:
        png, svg = fig_dir / f"{name}.png", fig_dir / f"{name}.svg"
        assert png.stat().st_size > 5_000, name
        assert svg.read_text(encoding="utf-8").lstrip().startswith("<?xml"), name
        assert _png_std(png) > 10.0, f"{name}.png is (nearly) blank"
    html = small_report.read_text(encoding="utf-8")
    assert html.count('<img src="data:image/svg+xml;base64,') == len(FULL_FIGURES)


def test_page_is_self_contained(small_report: Path) -> None:
    html = small_report.read_text(encoding="utf-8")
    assert "http://" not in html and "https://" not in html
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=\"(?!data:)[^\"]*\"[^>]*>", html)
    assert "<script>" in html and "<style>" in html
    assert "default-src 'none'" in html  # CSP: the page cannot fetch anything


def test_leaderboard_matches_scoring(small_store: Path, small_report: Path) -> None:
    from crsbench.stats.leaderboard import build_leaderboard
    from crsbench.store import load_runs

    written = pd.read_csv(small_report.parent / "tables" / "leaderboard.csv")
    ref = build_leaderboard(load_runs(small_store), n_replicates=60, seed=0)
    merged = written.merge(ref, on="encoder", suffixes=("", "_ref"))
    assert len(merged) == len(ref) == 4
    for col in ("CRS", "auroc", "ece", "retention", "robustness_drop", "P", "I", "W",
                "p_rank1", "p_top3"):  # fmt: skip
        np.testing.assert_allclose(merged[col], merged[f"{col}_ref"], rtol=1e-9, err_msg=col)
    for col in ("rank_crs", "rank_auroc", "tier"):
        assert (merged[col] == merged[f"{col}_ref"]).all(), col
    # the HTML table shows the same encoders in CRS order
    html = small_report.read_text(encoding="utf-8")
    board = re.search(r'<table class="sortable" id="board">(.*?)</table>', html, re.S).group(1)
    shown = re.findall(r"<tr><td[^>]*>1?\d</td><td[^>]*>\d+</td><td>([^<]+)</td>", board)
    assert shown == list(ref["encoder"])


def test_tables_written_and_consistent(small_report: Path) -> None:
    tables = small_report.parent / "tables"
    names = {p.stem for p in tables.glob("*.csv")}
    assert {"leaderboard", "profiles", "rank_moves", "agreement", "bootstrap_ranks",
            "leader_gap", "recalibration", "label_efficiency", "robustness", "shift",
            "layer_depth", "provenance"} <= names  # fmt: skip
    for p in tables.glob("*.csv"):
        assert len(pd.read_csv(p)) > 0, p.name
    boot = pd.read_csv(tables / "bootstrap_ranks.csv")
    assert boot["p_rank1"].sum() == pytest.approx(1.0)
    assert boot["p_top3"].sum() == pytest.approx(3.0)
    gap = pd.read_csv(tables / "leader_gap.csv").iloc[0]
    assert gap["leader"] == boot["encoder"].iloc[0]
    assert gap["diff"] == pytest.approx(boot["CRS"].iloc[0] - boot["CRS"].iloc[1])
    depth = pd.read_csv(tables / "layer_depth.csv")
    assert sorted(depth["layer"].unique()) == [0.25, 0.5, 0.75, 1.0]
    label = pd.read_csv(tables / "label_efficiency.csv")
    assert label.groupby(["dataset", "encoder"]).size().eq(5).all()


def test_label_curve_values_are_seed_means(small_store: Path, small_report: Path) -> None:
    import duckdb

    con = duckdb.connect(str(small_store / "results.duckdb"), read_only=True)
    want = con.execute(
        "SELECT avg(auroc) FROM runs WHERE encoder='resnet50' AND dataset='isic2019' AND "
        "fraction=0.05 AND layer=1.0 AND probe='logistic' AND condition='clean' AND "
        "recalibrator='none' AND regime='frozen' AND eval_dataset=dataset"
    ).fetchone()[0]
    con.close()
    label = pd.read_csv(small_report.parent / "tables" / "label_efficiency.csv")
    got = label.query("encoder == 'resnet50' and dataset == 'isic2019' and fraction == 0.05")
    assert got["auroc"].iloc[0] == pytest.approx(want)
    assert got["n_seeds"].iloc[0] == 3


def test_provenance_lists_versions(small_report: Path) -> None:
    from crsbench import __version__
    from crsbench.testing import SIMULATED_CONFIG_HASH

    body = _sections(small_report.read_text(encoding="utf-8"))["provenance"]
    for text in ("anchors version (scores)", "v2", __version__, "config hash",
                 SIMULATED_CONFIG_HASH[:12],
                 "Encoder revisions", "Dataset revisions"):  # fmt: skip
        assert text in body, text


def test_analyses_without_content_are_one_line_and_the_csp_names_the_script(
    small_report: Path,
) -> None:
    import base64
    import hashlib

    html = small_report.read_text(encoding="utf-8")
    found = _sections(html)
    # the simulated store has no medical encoder and flags nothing: one line each, no table
    lines = re.findall(r'<p class="empty-analysis">([^<]*)</p>', html)
    assert any(t.startswith("No medical-vs-general comparison") and "0 medical" in t
               for t in lines)  # fmt: skip
    assert "No shift result is flagged" in found["pretraining-overlap"]
    assert 'id="overlap-welch"' not in html and 'id="shift-test"' not in html
    # the first screen answers which encoder, how sure, what would change it
    short = found["in-short"]
    assert all(k in short for k in ("Which encoder", "How sure", "What would change it"))
    board = pd.read_csv(small_report.parent / "tables" / "leaderboard.csv")
    assert f"<b>{board['encoder'].iloc[0]}</b> has the highest CRS" in short
    # the one inline script runs because the CSP names its hash; nothing else may run
    script = re.findall(r"<script>(.*?)</script>", html, flags=re.S)
    assert len(script) == 1
    digest = base64.b64encode(hashlib.sha256(script[0].encode()).digest()).decode()
    assert "default-src 'none';" in html and f"script-src 'sha256-{digest}'\"" in html
    assert "unsafe-inline'\">" not in html.split("<title>")[0].split("script-src")[1]
