"""The report in headless Chromium (Debian's ``chromium``), driven over the DevTools protocol.

Checks that the 15-encoder × 4-dataset page loads with no console error, no exception and no
request other than the page itself (figures are ``data:`` URIs), that the leaderboard sorts,
and writes a screenshot (also copied to ``docs/img/report_screenshot.png``).
Needs ``chromium`` on PATH and the ``websocket-client`` package; skipped otherwise.
"""

from __future__ import annotations

import base64
import itertools
import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium")
websocket = pytest.importorskip("websocket", reason="websocket-client is not installed")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install chromium)"
)
DOCS_SHOT = Path(__file__).resolve().parents[3] / "docs" / "img" / "report_screenshot.png"


class DevTools:
    """A minimal Chrome DevTools protocol client over one page session."""

    def __init__(self, ws_url: str) -> None:
        self.ws = websocket.create_connection(ws_url, timeout=60, suppress_origin=True)
        self.ids = itertools.count(1)
        self.session: str | None = None
        self.events: list[dict] = []

    def call(self, method: str, **params: object) -> dict:
        msg_id = next(self.ids)
        msg: dict = {"id": msg_id, "method": method, "params": params}
        if self.session:
            msg["sessionId"] = self.session
        self.ws.send(json.dumps(msg))
        while True:
            reply = json.loads(self.ws.recv())
            if reply.get("id") == msg_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float = 60.0) -> None:
        end = time.monotonic() + timeout
        if any(e.get("method") == method for e in self.events):
            return
        while time.monotonic() < end:
            event = json.loads(self.ws.recv())
            self.events.append(event)
            if event.get("method") == method:
                return
        raise TimeoutError(method)


@pytest.fixture()
def browser(tmp_path: Path):
    profile = tmp_path / "profile"
    proc = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run", "--disable-extensions", f"--user-data-dir={profile}",
         "--remote-debugging-port=0", "--window-size=1400,3000", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    port_file = profile / "DevToolsActivePort"
    try:
        end = time.monotonic() + 60
        while not (port_file.is_file() and len(port_file.read_text().splitlines()) >= 2):
            if time.monotonic() > end or proc.poll() is not None:
                pytest.fail("chromium did not start its DevTools endpoint")
            time.sleep(0.1)
        port, path = port_file.read_text().splitlines()[:2]
        tools = DevTools(f"ws://127.0.0.1:{port}{path}")
        target = tools.call("Target.createTarget", url="about:blank")["targetId"]
        tools.session = tools.call("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        yield tools
        tools.ws.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_report_loads_offline_without_errors(big_report: Path, browser: DevTools,
                                             tmp_path: Path) -> None:  # fmt: skip
    for domain in ("Page", "Runtime", "Log", "Network"):
        browser.call(f"{domain}.enable")
    browser.call("Emulation.setDeviceMetricsOverride", width=1400, height=3000,
                 deviceScaleFactor=1, mobile=False)  # fmt: skip
    url = big_report.resolve().as_uri()
    browser.call("Page.navigate", url=url)
    browser.wait_for("Page.loadEventFired")
    state = browser.call("Runtime.evaluate", returnByValue=True, expression=(
        "JSON.stringify({sections: document.querySelectorAll('main > section').length,"
        " images: Array.from(document.images).filter(i => i.complete && i.naturalWidth > 0)"
        ".length, total: document.images.length,"
        " rows: document.querySelectorAll('#board tbody tr').length})"
    ))["result"]["value"]  # fmt: skip
    info = json.loads(state)
    assert info["sections"] == 13
    assert info["total"] >= 10 and info["images"] == info["total"]  # every figure decoded
    assert info["rows"] == 15
    shot = base64.b64decode(browser.call("Page.captureScreenshot", format="png")["data"])
    out = tmp_path / "report_screenshot.png"
    out.write_bytes(shot)
    assert out.stat().st_size > 50_000
    DOCS_SHOT.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(out, DOCS_SHOT)

    # sorting: click the "encoder" header, the first row becomes alphabetically first
    first = browser.call("Runtime.evaluate", returnByValue=True, expression=(
        "(() => { const th = Array.from(document.querySelectorAll('#board th'))"
        ".find(h => h.textContent === 'encoder'); th.click();"
        " return document.querySelector('#board tbody tr').cells[2].textContent; })()"
    ))["result"]["value"]  # fmt: skip
    assert first == "biomedclip"
    requests = [e["params"]["request"]["url"] for e in browser.events
                if e.get("method") == "Network.requestWillBeSent"]  # fmt: skip
    assert requests and all(u == url or u.startswith("data:") for u in requests), requests
    errors = [e for e in browser.events if e.get("method") == "Runtime.exceptionThrown"]
    errors += [e for e in browser.events if e.get("method") == "Runtime.consoleAPICalled"
               and e["params"]["type"] in ("error", "assert", "warning")]  # fmt: skip
    errors += [e for e in browser.events if e.get("method") == "Log.entryAdded"
               and e["params"]["entry"]["level"] in ("error", "warning")]  # fmt: skip
    assert not errors, errors


@pytest.mark.parametrize("width", [1280, 1920])
def test_leaderboard_fits_the_page_without_horizontal_scroll(
    big_report: Path, browser: DevTools, width: int
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
