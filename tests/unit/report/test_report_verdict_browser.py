"""The verdict page in headless Chromium: it loads offline with no console error, no exception
and no request but the page itself, and its ranking sorts. The page is built from small stores
written by the real writer (a cohort store and a benchmark store for ``--compare``).
Needs ``chromium`` and ``websocket-client`` (the ``browser`` fixture of conftest.py)."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import pytest

from crsbench.cohort.verdict_page import write_verdict
from crsbench.testing import simulate_runs, write_store

pytestmark = pytest.mark.skipif(
    shutil.which("chromium") is None,
    reason="Debian's chromium is not installed (apt-get install chromium)",
)
ENCODERS = ("dinov2", "biomedclip", "rad_dino")


def _store(path: Path, encoders, datasets, seeds: int) -> Path:
    df = simulate_runs(n_encoders=15, datasets=datasets, seeds=seeds, rng_seed=0)
    write_store(df[df["encoder"].isin(encoders)].reset_index(drop=True), path)
    return path


def test_verdict_loads_offline_without_errors(browser, tmp_path: Path) -> None:
    cohort = _store(tmp_path / "cohort", ENCODERS, ("chexpert",), 3)
    bench = _store(tmp_path / "bench", ENCODERS[:2], ("isic2019", "chexpert"), 2)
    page = write_verdict(cohort, compare=bench)
    url = browser.load(page, width=1280, height=1600)
    info = json.loads(browser.call("Runtime.evaluate", returnByValue=True, expression=(
        "JSON.stringify({sections: Array.from(document.querySelectorAll('main > section'))"
        ".map(s => s.id), rows: document.querySelectorAll('#ranking tbody tr').length,"
        " methods: Array.from(document.querySelectorAll('#ranking tbody tr')).map(r =>"
        " r.cells[Array.from(document.querySelectorAll('#ranking th'))"
        ".findIndex(h => h.textContent === 'interval')].textContent)})"
    ))["result"]["value"])  # fmt: skip
    assert info["sections"] == ["verdict", "ranking", "recalibration", "cohort", "compare"]
    assert info["rows"] == len(ENCODERS)
    assert info["methods"] == ["seed-only"] * len(ENCODERS)  # no predictions in these stores
    shot = base64.b64decode(browser.call("Page.captureScreenshot", format="png")["data"])
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 20_000

    first = browser.call("Runtime.evaluate", returnByValue=True, expression=(
        "(() => { const th = Array.from(document.querySelectorAll('#ranking th'))"
        ".find(h => h.textContent === 'encoder'); th.click();"
        " return document.querySelector('#ranking tbody tr').cells[1].textContent; })()"
    ))["result"]["value"]  # fmt: skip
    assert first == "biomedclip"  # sorted by name
    browser.assert_offline_without_errors(url)
