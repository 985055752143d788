"""The report fits and prints (headless Chromium): at 1,280 px and on a 390 px phone nothing
is cut off (only a table's own scroll box may be wider than the screen, and its header stays
in view), and Print to PDF gives pages whose tables fit the page width.

Skipped without Debian's ``chromium`` (fixtures in conftest.py).
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    shutil.which("chromium") is None,
    reason="Debian's chromium is not installed (apt-get install chromium)",
)

#: Elements that stick out of the viewport, outside a scroll box (a table's .table-wrap or a
#: <pre>), and whether every table sits in a scroll box with a sticky header.
OVERFLOW = """JSON.stringify((() => {
  const view = document.documentElement.clientWidth;
  const boxed = el => el.closest('.table-wrap, pre');
  const out = Array.from(document.body.querySelectorAll('*')).filter(el => {
    if (boxed(el) && !el.matches('.table-wrap')) { return false; }
    const r = el.getBoundingClientRect();
    return r.width > 0 && (r.right > view + 1 || r.left < -1);
  }).map(el => el.tagName + (el.id ? '#' + el.id : '') + '.' + el.className);
  const tables = Array.from(document.querySelectorAll('main table'));
  return {view: view, inner: window.innerWidth, page: document.documentElement.scrollWidth, out: out.slice(0, 10),
          tables: tables.length,
          unboxed: tables.filter(t => !t.parentElement.matches('.table-wrap')).length,
          sticky: tables.filter(t => t.tHead && getComputedStyle(t.tHead.rows[0].cells[0])
                                     .position === 'sticky').length};
})())"""


@pytest.mark.parametrize(("width", "mobile"), [(1280, False), (390, True)])
def test_nothing_is_cut_off(big_report: Path, browser, width: int, mobile: bool) -> None:
    browser.call("Page.enable")
    browser.call("Emulation.setDeviceMetricsOverride", width=width, height=900,
                 deviceScaleFactor=1, mobile=mobile)  # fmt: skip
    browser.call("Page.navigate", url=big_report.resolve().as_uri())
    browser.wait_for("Page.loadEventFired")
    info = json.loads(browser.call("Runtime.evaluate", returnByValue=True,
                                   expression=OVERFLOW)["result"]["value"])  # fmt: skip
    assert info["inner"] == width  # the page's own scroll bar may take some of it (view)
    assert info["out"] == [], info  # nothing wider than the screen outside a scroll box
    assert info["page"] <= info["view"], info  # so the page itself never scrolls sideways
    assert info["tables"] >= 10 and info["unboxed"] == 0, info
    assert info["sticky"] == info["tables"], info


def _pages(pdf: bytes) -> int:
    return pdf.count(b"/Type /Page") - pdf.count(b"/Type /Pages")


def test_print_to_pdf_gives_pages_whose_tables_fit(big_report: Path, browser,
                                                   tmp_path: Path) -> None:  # fmt: skip
    out = tmp_path / "report.pdf"
    subprocess.run([shutil.which("chromium"), "--headless", "--no-sandbox", "--disable-gpu",
                    "--no-first-run", f"--user-data-dir={tmp_path / 'pdf_profile'}",
                    "--no-pdf-header-footer", f"--print-to-pdf={out}",
                    big_report.resolve().as_uri()],
                   check=True, timeout=180, capture_output=True)  # fmt: skip
    assert out.read_bytes().startswith(b"%PDF") and _pages(out.read_bytes()) >= 5
    browser.call("Page.enable")
    browser.call("Page.navigate", url=big_report.resolve().as_uri())
    browser.wait_for("Page.loadEventFired")
    pdf = base64.b64decode(browser.call("Page.printToPDF", paperWidth=8.27, paperHeight=11.69,
                                        printBackground=False)["data"])  # fmt: skip
    assert pdf.startswith(b"%PDF")
    assert _pages(pdf) >= 5
    # the same layout in the DOM: print media on an A4 page's printable width (~ 705 px)
    browser.call("Emulation.setEmulatedMedia", media="print")
    browser.call("Emulation.setDeviceMetricsOverride", width=705, height=1000,
                 deviceScaleFactor=1, mobile=False)  # fmt: skip
    wide = json.loads(browser.call("Runtime.evaluate", returnByValue=True, expression=(
        "JSON.stringify(Array.from(document.querySelectorAll('table')).filter(t => "
        "t.getBoundingClientRect().right > document.documentElement.clientWidth + 1)"
        ".map(t => t.id || t.className))"
    ))["result"]["value"])  # fmt: skip
    assert wide == []
