"""The "Your weights" panel in headless Chromium: moving the sliders (and switching an axis
off) re-ranks the encoders exactly as crsbench's own scoring does for those weights, the
fragment reproduces the choice, and "protocol weights" restores the static ranking.

Skipped without Debian's ``chromium`` (fixtures in conftest.py).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    shutil.which("chromium") is None,
    reason="Debian's chromium is not installed (apt-get install chromium)",
)

MOVE = (
    "(() => {{ const set = (k, v) => {{ const s = document.getElementById('wp-' + k);"
    " s.value = String(v); s.dispatchEvent(new Event('input')); }};"
    " set('P', {P}); set('I', {I}); set('W', {W}); {extra}"
    " return JSON.stringify({{order: Array.from(document.querySelectorAll('#wp-board tbody tr'))"
    ".map(r => [r.dataset.encoder, Number(r.cells[2].textContent)]), hash: location.hash}}); }})()"
)
READ = (
    "JSON.stringify({order: Array.from(document.querySelectorAll('#wp-board tbody tr'))"
    ".map(r => [r.dataset.encoder, Number(r.cells[2].textContent)]), hash: location.hash,"
    " status: document.getElementById('wp-status').textContent})"
)


def _eval(browser, expression: str) -> dict:
    return json.loads(browser.call("Runtime.evaluate", returnByValue=True,
                                   expression=expression)["result"]["value"])  # fmt: skip


def _python(store: Path, sliders: dict[str, int], axes: tuple[str, ...]) -> list[tuple]:
    """The ranking crsbench computes for the same (normalised) slider weights."""
    from crsbench.scoring import score_runs
    from crsbench.stats.weight_sensitivity import ranking_with_weights
    from crsbench.store import load_runs

    total = sum(sliders.values())
    weights = {k: v / total for k, v in sliders.items()}
    cells = score_runs(load_runs(store), plan=store)
    ranked = ranking_with_weights(cells, weights, axes=axes)
    return [(e, round(float(c), 3)) for e, c in zip(ranked["encoder"], ranked["CRS"], strict=True)]


def _page_order(state: dict) -> list[tuple]:
    return [(e, c) for e, c in state["order"]]


def test_sliders_rank_as_python_and_the_link_reproduces_them(
    small_store: Path, small_report: Path, browser
) -> None:
    from crsbench.scoring import AXES

    url = browser.load(small_report, width=1280, height=900)
    protocol = _eval(browser, READ)
    assert protocol["hash"] == "" and protocol["status"].startswith("Protocol weights")
    assert _page_order(protocol) == _python(small_store, {"P": 60, "I": 25, "W": 15}, AXES)

    sliders = {"P": 10, "I": 30, "W": 60}
    moved = _eval(browser, MOVE.format(**sliders, extra=""))
    assert _page_order(moved) == _python(small_store, sliders, AXES)
    assert moved["hash"] == "#weights=P10,I30,W60;axes=" + ",".join(AXES)

    off = "document.getElementById('wp-ax-ece').click();"
    fewer = _eval(browser, MOVE.format(**sliders, extra=off))
    kept = tuple(a for a in AXES if a != "ece")
    assert _page_order(fewer) == _python(small_store, sliders, kept)

    browser.assert_offline_without_errors(url)  # CSP: the hashed script ran, nothing else
    # the link alone reproduces the choice in a fresh page
    browser.call("Page.navigate", url=url + fewer["hash"])
    browser.call("Page.reload")
    browser.events.clear()
    browser.wait_for("Page.loadEventFired")
    again = _eval(browser, READ)
    assert _page_order(again) == _page_order(fewer)

    reset = _eval(browser, "document.getElementById('wp-reset').click();" + READ)
    assert _page_order(reset) == _page_order(protocol) and reset["hash"] == ""
    assert not browser.problems(), browser.problems()
