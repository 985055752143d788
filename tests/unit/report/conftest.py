"""Fixtures of the report tests: small synthetic stores, the reports built on them, and a
headless Chromium page driven over the DevTools protocol (Debian's ``chromium``)."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

SMALL_DATASETS = ("isic2019", "aptos2019", "chexpert")
BIG_DATASETS = ("isic2019", "aptos2019", "chexpert", "padchest")


def make_store(path: Path, n_encoders: int, datasets: tuple[str, ...], seeds: int) -> Path:
    """A synthetic results store (``simulate_runs`` → ``write_store``)."""
    from crsbench.testing import simulate_runs, write_store

    df = simulate_runs(n_encoders=n_encoders, datasets=datasets, seeds=seeds, rng_seed=0)
    write_store(df, path)
    return path


@pytest.fixture(scope="session")
def small_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """4 encoders × 3 datasets × 3 seeds."""
    return make_store(tmp_path_factory.mktemp("small") / "store", 4, SMALL_DATASETS, 3)


@pytest.fixture(scope="session")
def small_report(small_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``index.html`` of the small store (60 bootstrap replicates)."""
    from crsbench.cli.report_command import write_report

    return write_report(small_store, tmp_path_factory.mktemp("small_out"), n_replicates=60)


@pytest.fixture(scope="session")
def big_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``index.html`` of a 15 encoders × 4 datasets store (the layout check)."""
    from crsbench.cli.report_command import write_report

    store = make_store(tmp_path_factory.mktemp("big") / "store", 15, BIG_DATASETS, 2)
    return write_report(store, tmp_path_factory.mktemp("big_out"), n_replicates=40)


class DevTools:
    """A minimal Chrome DevTools protocol client over one page session."""

    def __init__(self, ws_url: str) -> None:
        import websocket

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

    def load(self, page: Path, width: int | None = None, height: int | None = None) -> str:
        """Enable the page, console, log and network events, optionally set the viewport,
        open ``page`` and wait for its load event; the page's URL."""
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")
        if width is not None:
            self.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                      deviceScaleFactor=1, mobile=False)  # fmt: skip
        url = page.resolve().as_uri()
        self.call("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired")
        return url

    def requests(self) -> list[str]:
        """URLs the page requested."""
        return [e["params"]["request"]["url"] for e in self.events
                if e.get("method") == "Network.requestWillBeSent"]  # fmt: skip

    def problems(self) -> list[dict]:
        """Exceptions, console errors/warnings and log errors/warnings among the page's events."""
        out = [e for e in self.events if e.get("method") == "Runtime.exceptionThrown"]
        out += [e for e in self.events if e.get("method") == "Runtime.consoleAPICalled"
                and e["params"]["type"] in ("error", "assert", "warning")]  # fmt: skip
        out += [e for e in self.events if e.get("method") == "Log.entryAdded"
                and e["params"]["entry"]["level"] in ("error", "warning")]  # fmt: skip
        return out

    def assert_offline_without_errors(self, url: str) -> None:
        """The page requested only itself (and data: URLs) and logged no error or warning."""
        requests = self.requests()
        assert url in requests and all(u == url or u.startswith("data:") for u in requests), (
            requests
        )
        assert not self.problems(), self.problems()


@pytest.fixture()
def browser(tmp_path: Path):
    """A :class:`DevTools` session on a fresh headless Chromium page (skips without chromium
    or websocket-client)."""
    pytest.importorskip("websocket", reason="websocket-client is not installed")
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    profile = tmp_path / "profile"
    proc = subprocess.Popen(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu",
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
