"""The consortium page in headless Chromium: it loads offline with no console error, no
exception and no request but the page itself, and its tables sort.

The fast test builds the page from planted site summaries (the summary format); the slow one
is the end-to-end path: three synthetic sites profiled with the offline encoders, their
summaries exported through the command line (none carries an image or patient id, a path or a
substring of one), combined, and the page opened. Needs ``chromium`` and ``websocket-client``
(the ``browser`` fixture of conftest.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.consortium.planted import planted_consortium
from crsbench.consortium.summary import write_summary

pytestmark = pytest.mark.skipif(
    shutil.which("chromium") is None,
    reason="Debian's chromium is not installed (apt-get install chromium)",
)
_SECTIONS = ["verdict", "pooled-crs", "pooled-axes", "sites-crs", "stability", "sites"]


def _check_page(browser, page: Path, n_ranked: int) -> None:
    url = browser.load(page, width=1280, height=1600)
    info = json.loads(browser.call("Runtime.evaluate", returnByValue=True, expression=(
        "JSON.stringify({sections: Array.from(document.querySelectorAll('main > section'))"
        ".map(s => s.id), rows: document.querySelectorAll('#stability tbody tr').length})"
    ))["result"]["value"])  # fmt: skip
    assert info == {"sections": _SECTIONS, "rows": n_ranked}
    first = browser.call("Runtime.evaluate", returnByValue=True, expression=(
        "(() => { const th = Array.from(document.querySelectorAll('#stability th'))"
        ".find(h => h.textContent === 'encoder'); th.click(); th.click();"
        " return document.querySelector('#stability tbody tr').cells[1].textContent; })()"
    ))["result"]["value"]  # fmt: skip
    assert first  # the table sorted without an error
    browser.assert_offline_without_errors(url)


def test_consortium_page_loads_offline_without_errors(browser, tmp_path: Path) -> None:
    planted = planted_consortium(np.random.default_rng(3), 4, 0.02)
    paths = [write_summary(s, tmp_path / f"{s.site}.json") for s in planted.sites]
    r = CliRunner().invoke(app, ["combine", *map(str, paths), "--out", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    _check_page(browser, tmp_path / "out" / "consortium.html", 2)


def _distinctive_site(root: Path, i: int) -> tuple[Path, Path, list[str]]:
    """A synthetic cohort whose patient ids, file and folder names are distinctive; (csv,
    images, every id and path that must not leave the site: the paths below ``root``, which
    end every absolute path)."""
    from crsbench.testing.cohort import write_cohort

    raw_csv, raw_images = write_cohort(root / f"rawQZV{i}", 90, classes=("benign", "malignant"),
                                       images_per_patient=2, seed=i)  # fmt: skip
    images = raw_images.rename(raw_images.with_name(f"scansKQW{i}"))
    csv = raw_csv.with_name(f"cohortJXW{i}.csv")
    lines = raw_csv.read_text().splitlines()
    raw_csv.unlink()
    secret, out = [], [lines[0]]
    for line in lines[1:]:
        path, patient, rest = line.split(",", 2)
        new_path = f"QZX{i}{path.replace('.png', '')}WVK.png"
        new_patient = f"PTN{i}K{patient[1:]}JRQ"
        (images / path).rename(images / new_path)
        secret += [new_path, new_patient]
        out.append(f"{new_path},{new_patient},{rest}")
    csv.write_text("\n".join(out) + "\n")
    return csv, images, [*secret, str(csv.relative_to(root)), str(images.relative_to(root))]


def _substrings(texts: list[str], n: int = 6) -> set[str]:
    return {t[j : j + n] for t in texts for j in range(len(t) - n + 1)}


@pytest.mark.slow
def test_three_profiled_sites_end_to_end(browser, tmp_path: Path) -> None:
    cli, summaries = CliRunner(), []
    for i in range(3):
        csv, images, secret = _distinctive_site(tmp_path / "sites", i)
        out = tmp_path / f"profile{i}"
        r = cli.invoke(app, ["profile", "--data", str(csv), "--images", str(images),
                             "--label-columns", "diagnosis", "--group-column", "patient",
                             "--encoders", "pixel,random_cnn", "--out", str(out),
                             "--device", "cpu", "--jobs", "1"])  # fmt: skip
        assert r.exit_code == 0, r.output
        summary = tmp_path / f"site{i}.json"
        r = cli.invoke(app, ["export-summary", "--store", str(out), "--site", f"hospital_{i}",
                             "--out", str(summary)])  # fmt: skip
        assert r.exit_code == 0, r.output
        body = summary.read_text()
        leaked = sorted(s for s in _substrings(secret) if s in body)
        assert not leaked, leaked[:10]
        summaries.append(summary)
    r = cli.invoke(app, ["combine", *map(str, summaries), "--out", str(tmp_path / "consortium")])
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "consortium" / "consortium.json").read_text())
    assert [s["site"] for s in doc["sites"]] == ["hospital_0", "hospital_1", "hospital_2"]
    crs = [p for p in doc["pooled"] if p["quantity"] == "CRS"]
    assert len(crs) == 2 and all(p["k"] == 3 and p["mean"] is not None for p in crs)
    _check_page(browser, tmp_path / "consortium" / "consortium.html", 2)
