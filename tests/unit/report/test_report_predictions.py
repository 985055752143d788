"""The subgroup, operating-point and flip sections on the 4-encoder toy store with planted
predictions (:func:`crsbench.testing.prediction_store.toy_cells`): each section and its CSV,
label names, "too small" instead of a number, the worst-subgroup ranking; and the page in
headless Chromium without console errors or network requests."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest


@pytest.fixture(scope="module")
def toy_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from crsbench.cli.report_command import write_report
    from crsbench.testing.prediction_store import toy_cells, write_prediction_store

    store = tmp_path_factory.mktemp("toy") / "store"
    write_prediction_store(store, toy_cells())
    return write_report(store, tmp_path_factory.mktemp("toy_out"), n_replicates=30)


def _section(html: str, sid: str) -> str:
    start = html.index(f'id="{sid}"')
    end = html.find("<section", start)
    return html[start : end if end > 0 else None]


def test_sections_show_planted_values(toy_report: Path) -> None:
    html = toy_report.read_text(encoding="utf-8")
    sub = _section(html, "subgroups")
    assert "12. Subgroups" in sub and "How to read" in sub
    assert "too small" in sub and "worst-subgroup CRS [bootstrap range]" in sub
    assert "gap best − worst [95% CI]" not in sub  # the gap range is no validated 95% CI
    assert "real difference (p = 0.001)" in sub  # resnet50's planted sex gap
    ops = _section(html, "operating-points")
    assert "13. Operating points under shift" in ops
    assert (
        "mimic_cxr" in ops and "nih_cxr14" in ops and "No Finding" in ops
    )  # a label name, never an index
    flips = _section(html, "flips")
    assert "14. Prediction flips" in flips and "How to read" in flips
    tables = toy_report.parent / "tables"
    ranking = pd.read_csv(tables / "subgroup_ranking.csv")
    assert ranking["encoder"].iloc[-1] == "resnet50"
    cells = pd.read_csv(tables / "subgroup_cells.csv")
    small = cells[cells["subgroup"] == "PA"]
    assert (small["status"] == "too small").all() and small["auroc"].isna().all()
    lost = pd.read_csv(tables / "operating_points.csv")
    # 20 positives on validation and on each target: below the settings' 40, nothing decides
    assert set(lost["status"]) == {"too few positives (20)"}
    assert lost["keeps_operating_point"].isna().all() and lost["sensitivity_lost"].isna().all()
    assert "not decided" in ops and "No Finding (20)" in ops and "too few positives" in ops
    assert set(lost["min_positives"]) == {40}
    flips_csv = pd.read_csv(tables / "prediction_flips.csv")
    assert flips_csv["flip_share"].max() == pytest.approx(0.1)


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed")
def test_prediction_sections_load_offline_without_errors(toy_report: Path, browser) -> None:
    url = browser.load(toy_report)
    info = json.loads(browser.call("Runtime.evaluate", returnByValue=True, expression=(
        "JSON.stringify({ids: Array.from(document.querySelectorAll('main > section'))"
        ".map(s => s.id), ranking: document.querySelectorAll('#subgroup-ranking tbody tr')"
        ".length, ops: document.querySelectorAll('#operating-points tbody tr').length,"
        " flips: document.querySelectorAll('#flips tbody tr').length})"
    ))["result"]["value"])  # fmt: skip
    assert {"subgroups", "operating-points", "flips"} <= set(info["ids"])
    assert info["ranking"] == 4 and info["ops"] == 8 and info["flips"] > 0
    # the worst-subgroup ranking sorts by encoder name on a header click
    first = browser.call("Runtime.evaluate", returnByValue=True, expression=(
        "(() => { const th = Array.from(document.querySelectorAll('#subgroup-ranking th'))"
        ".find(h => h.textContent === 'encoder'); th.click();"
        " return document.querySelector('#subgroup-ranking tbody tr').cells[2].textContent; })()"
    ))["result"]["value"]  # fmt: skip
    assert first == "clip"
    browser.assert_offline_without_errors(url)


def test_pictures_before_tables(toy_report: Path) -> None:
    html = toy_report.read_text(encoding="utf-8")
    for sid, fig, table in (("subgroups", "subgroup_forest", "subgroup-cells"),
                            ("operating-points", "operating_point_transfer", "operating-points"),
                            ("flips", "prediction_flips", "flips")):  # fmt: skip
        body = _section(html, sid)
        assert body.index(f'id="fig-{fig}"') < body.index('<details class="full">'), sid
        closed = re.search(r'<details class="full"><summary>[^<]*</summary>(.*?)</details>',
                           body[body.index(f'id="fig-{fig}"'):], flags=re.S)  # fmt: skip
        assert closed is not None and f'id="{table}"' in body, sid
        assert (toy_report.parent / "figures" / f"{fig}.png").stat().st_size > 10_000


def test_forest_rows_drop_single_subgroups_and_keep_the_smallest_p() -> None:
    from crsbench.report.figures_predictions import forest_rows

    sub = pd.DataFrame({
        "encoder": ["a"] * 5 + ["b"] * 2, "dataset": ["d"] * 7,
        "attribute": ["sex", "sex", "view", "age", "age", "sex", "sex"],
        "subgroup": ["f", "m", "AP", "<40", ">=40", "f", "m"],
        "status": ["ok"] * 7,
    })  # fmt: skip
    worst = pd.DataFrame({"encoder": ["a", "a", "b"], "dataset": ["d"] * 3,
                          "attribute": ["sex", "age", "sex"], "p_value": [0.5, 0.01, 0.2]})  # fmt: skip
    every = forest_rows(sub)
    assert "view" not in set(every["attribute"]) and len(every) == 6  # one subgroup: no gap
    two = forest_rows(sub, worst, max_rows=2)
    assert set(zip(two["encoder"], two["attribute"], strict=True)) == {("a", "age")}


def test_bias_corrected_crs_and_gap_beside_their_basic_intervals(toy_report: Path) -> None:
    """Each basic CRS interval and the leader's gap interval has its bias-corrected estimate
    beside it: a named column on the page and in the CSVs, the gap's = the difference of the
    two encoders' corrected CRS."""
    from crsbench.stats.intervals import outside_phrase

    html = toy_report.read_text(encoding="utf-8")
    assert "CRS bias-corrected" in _section(html, "leaderboard")
    assert "bias-corrected gap" in _section(html, "uncertainty")
    assert "The CRS estimate of" not in html  # the long paragraph is gone
    tables = toy_report.parent / "tables"
    board = pd.read_csv(tables / "leaderboard.csv").set_index("encoder")
    assert board["crs_corrected"].notna().all()
    gap = pd.read_csv(tables / "leader_gap.csv").iloc[0]
    want = board.loc[gap["leader"], "crs_corrected"] - board.loc[gap["runner_up"], "crs_corrected"]
    assert gap["diff_corrected"] == pytest.approx(want, abs=1e-12)
    for enc, r in board.iterrows():  # every plug-in outside its interval has its phrase
        why = outside_phrase(r["CRS"], r["crs_ci_low"], r["crs_ci_high"], r["crs_corrected"])
        assert (f"{enc}: {why}." in html) if why else True
