"""Cells a ``run --skip-missing`` left out are named in the report, never imputed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from crsbench.cli.report_command import report_data, write_report


def test_skipped_cells_are_named_under_the_leaderboard(small_store: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(small_store, store)
    before = report_data(store, n_replicates=0, seed=0).board
    skipped = [{"encoder": "chexzero", "dataset": "isic2019",
                "reason": "weights of encoder 'chexzero' not found"}]  # fmt: skip
    (store / "last_run.json").write_text(json.dumps({"skipped_cells": skipped}))
    index = write_report(store, tmp_path / "report", n_replicates=0)
    html = index.read_text(encoding="utf-8")
    assert "chexzero × isic2019 skipped by the last run (--skip-missing)" in html
    assert "weights of encoder &#x27;chexzero&#x27; not found" in html
    board = report_data(store, n_replicates=0, seed=0).board
    assert list(board["encoder"]) == list(before["encoder"])  # nothing imputed or added
