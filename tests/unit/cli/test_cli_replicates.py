"""The protocol's 10,000 replicates by default for analyze and report; fewer said on screen."""

from __future__ import annotations

import inspect
import json

import pytest
from typer.testing import CliRunner

import crsbench.cli.report_command  # noqa: F401  (registers the command)
from crsbench.cli.app import app
from crsbench.cli.output import quick_look_note
from crsbench.cli.report_command import write_report
from crsbench.protocol import BOOTSTRAP_REPLICATES
from crsbench.stats import run_analyses
from crsbench.testing import simulate_runs, write_store


def test_quick_look_note_below_the_protocols_count_only():
    assert BOOTSTRAP_REPLICATES == 10_000
    assert quick_look_note(2_000) == "quick look: 2,000 replicates (the protocol's count is 10,000)"
    assert quick_look_note(10_000) == quick_look_note(20_000) == quick_look_note(0) == ""


@pytest.mark.parametrize("command", ["analyze", "report"])
def test_analyze_and_report_default_to_the_protocols_count(command):
    text = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"}).stdout
    assert "default: 10000" in " ".join(text.split())


def test_library_entry_points_default_to_the_protocols_count():
    for fn in (run_analyses, write_report):
        assert inspect.signature(fn).parameters["n_replicates"].default == BOOTSTRAP_REPLICATES


def test_a_quick_look_is_said_on_screen(tmp_path):
    write_store(simulate_runs(n_encoders=3, datasets=("isic2019",), seeds=2), tmp_path / "s")
    res = CliRunner().invoke(app, ["analyze", "--store", str(tmp_path / "s"), "--replicates", "20"])
    assert res.exit_code == 0, res.output
    assert "NOTE: quick look: 20 replicates (the protocol's count is 10,000)." in res.output
    summary = json.loads((tmp_path / "s" / "analysis" / "summary.json").read_text())
    assert summary["analyses"]["bootstrap"]["quick_look"] is True
