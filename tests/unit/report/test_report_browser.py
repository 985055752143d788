"""The report in headless Chromium (Debian's ``chromium``), driven over the DevTools protocol.

Checks that the 15-encoder × 4-dataset page loads with no console error, no exception and no
request other than the page itself (figures are ``data:`` URIs), that the leaderboard sorts,
and takes a screenshot (into the test's temporary folder: a test never writes into the
repository).
Needs ``chromium`` on PATH and the ``websocket-client`` package; skipped otherwise
(the ``browser`` fixture and :class:`DevTools` are in conftest.py).
"""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    shutil.which("chromium") is None,
    reason="Debian's chromium is not installed (apt-get install chromium)",
)


def test_report_loads_offline_without_errors(big_report: Path, browser,
                                             tmp_path: Path) -> None:  # fmt: skip
    url = browser.load(big_report, width=1400, height=3000)
    state = browser.call("Runtime.evaluate", returnByValue=True, expression=(
        "JSON.stringify({sections: document.querySelectorAll('main > section').length,"
        " images: Array.from(document.images).filter(i => i.complete && i.naturalWidth > 0)"
        ".length, total: document.images.length,"
        " rows: document.querySelectorAll('#board tbody tr').length})"
    ))["result"]["value"]  # fmt: skip
    info = json.loads(state)
    assert info["sections"] == 18
    assert info["total"] >= 10 and info["images"] == info["total"]  # every figure decoded
    assert info["rows"] == 15
    shot = base64.b64decode(browser.call("Page.captureScreenshot", format="png")["data"])
    out = tmp_path / "report_screenshot.png"
    out.write_bytes(shot)
    assert out.stat().st_size > 50_000

    # sorting: click the "encoder" header, the first row becomes alphabetically first
    first = browser.call("Runtime.evaluate", returnByValue=True, expression=(
        "(() => { const th = Array.from(document.querySelectorAll('#board th'))"
        ".find(h => h.textContent === 'encoder'); th.click();"
        " return document.querySelector('#board tbody tr').cells[2].textContent; })()"
    ))["result"]["value"]  # fmt: skip
    assert first == "biomedclip"
    browser.assert_offline_without_errors(url)


@pytest.mark.parametrize("width", [1280, 1920])
def test_leaderboard_fits_the_page_without_horizontal_scroll(
    big_report: Path, browser, width: int
) -> None:
    browser.call("Page.enable")
    browser.call("Emulation.setDeviceMetricsOverride", width=width, height=1200,
                 deviceScaleFactor=1, mobile=False)  # fmt: skip
    browser.call("Page.navigate", url=big_report.resolve().as_uri())
    browser.wait_for("Page.loadEventFired")
    sizes = json.loads(browser.call("Runtime.evaluate", returnByValue=True, expression=(
        "(() => { const wrap = document.querySelector('#board').closest('.table-wrap');"
        " const legend = document.querySelector('#leaderboard p.legend');"
        " return JSON.stringify({scroll: wrap.scrollWidth, client: wrap.clientWidth,"
        " page: document.documentElement.scrollWidth, view: window.innerWidth,"
        " columns: document.querySelectorAll('#board thead th').length,"
        " legend: legend ? legend.textContent : ''}); })()"
    ))["result"]["value"])  # fmt: skip
    assert sizes["columns"] >= 15
    assert sizes["scroll"] <= sizes["client"], sizes  # the leaderboard does not scroll
    assert sizes["page"] <= sizes["view"] == width, sizes  # nor does the page
    assert "CRS = 0.60·P + 0.25·I + 0.15·W" in sizes["legend"]
