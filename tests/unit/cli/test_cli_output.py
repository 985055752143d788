"""Every command's output read from a pipe: whole names, no redraws, ``--json``, exit codes."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.datasets import DATASETS
from crsbench.encoders import ENCODERS
from crsbench.runs.progress import RunProgress

runner = CliRunner()  # not a terminal: the pipe layout
SRC = str(Path(__file__).resolve().parents[3] / "src")


def _tsv(text: str) -> list[list[str]]:
    return [line.split("\t") for line in text.splitlines() if line]


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["encoders", "list"], ENCODERS.names()),
        (["datasets", "list"], DATASETS.names()),
    ],
)
def test_listing_in_a_pipe_is_tab_separated_with_whole_names(args, names) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "\r" not in result.output and "\x1b[" not in result.output
    rows = _tsv(result.stdout)
    assert rows[0][0] == "name" and len({len(r) for r in rows}) == 1
    assert sorted(r[0] for r in rows[1:]) == sorted(names)


def test_encoders_list_greps_in_a_real_pipe() -> None:
    env = {**os.environ, "PYTHONPATH": SRC, "COLUMNS": "80"}
    proc = subprocess.run([sys.executable, "-m", "crsbench.cli", "encoders", "list"],
                          capture_output=True, text=True, env=env, timeout=120, check=True)  # fmt: skip
    line = next(ln for ln in proc.stdout.splitlines() if "biomedclip" in ln)
    assert line.split("\t")[:3] == ["biomedclip", "BiomedCLIP", "medical"]
    assert "medsiglip\tMedSigLIP" in proc.stdout and "\r" not in proc.stdout


def test_help_in_a_real_pipe_is_plain_and_whole() -> None:
    env = {**os.environ, "PYTHONPATH": SRC, "COLUMNS": "80"}
    env.pop("TYPER_USE_RICH", None)
    proc = subprocess.run([sys.executable, "-m", "crsbench.cli", "run", "--help"],
                          capture_output=True, text=True, env=env, timeout=120, check=True)  # fmt: skip
    out = proc.stdout
    assert "…" not in out and "│" not in out and "\x1b[" not in out  # no box, no cut text
    assert "(output: OUTPUT_DIR-dry-run)." in " ".join(out.split())  # every word, in order
    assert all(len(line) <= 80 for line in out.splitlines())


@pytest.mark.parametrize("args", [["datasets", "list", "--json"], ["encoders", "list", "--json"]])
def test_json_is_valid_and_lists_every_name(args) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    names = {row["name"] for row in json.loads(result.stdout)}
    assert names == set((DATASETS if args[0] == "datasets" else ENCODERS).names())


@pytest.mark.parametrize(
    "args",
    [["run", "x.yaml", "--quiet", "--verbose"], ["score", "--no-such-option"],
     ["report", "--store", "nowhere", "--out", "o"], ["encoders", "show", "no_such"]],
)  # fmt: skip
def test_usage_config_and_data_errors_exit_2(args, tmp_path) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output


def test_every_long_command_has_quiet_verbose_and_documents_exit_codes() -> None:
    for command in ("run", "demo", "analyze", "score", "report", "synth"):
        text = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200"}).stdout
        assert "--quiet" in text and "--verbose" in text, command
        assert "130 interrupted" in text, command


def _events(progress: RunProgress, n_cells: int) -> None:
    progress("plan", {"cells": n_cells, "done": 0, "records": 10, "extractions": 2})
    progress("stage_start", {"name": "lora_adaptation"})
    for i in range(n_cells):
        progress("cell", {"encoder": f"encoder_with_a_long_name_{i}", "dataset": "chexpert",
                          "records": 5, "extract_s": 1.0, "evaluate_s": 2.0})  # fmt: skip


def test_run_progress_in_a_log_is_one_plain_line_per_cell() -> None:
    buf = io.StringIO()
    console = Console(file=buf, width=40)  # not a terminal
    with RunProgress(console) as progress:
        _events(progress, 3)
    text = buf.getvalue()
    assert "\r" not in text and "\x1b[" not in text and "━" not in text
    cells = [ln for ln in text.splitlines() if ln.startswith("cell done: ")]
    assert [ln.split()[2] for ln in cells] == [f"encoder_with_a_long_name_{i}" for i in range(3)]
    assert "stage lora_adaptation ..." in text


def test_quiet_run_progress_prints_nothing() -> None:
    buf = io.StringIO()
    with RunProgress(Console(file=buf), verbosity=0) as progress:
        _events(progress, 2)
    assert buf.getvalue() == ""


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    from crsbench.testing import simulate_runs, write_store

    path = tmp_path_factory.mktemp("cli") / "store"
    write_store(simulate_runs(n_encoders=3, datasets=("isic2019", "chexpert"), seeds=2,
                              rng_seed=0), path)  # fmt: skip
    return path


def test_score_in_a_pipe_and_as_json(store, tmp_path) -> None:
    base = ["score", "--store", str(store), "--out", str(tmp_path / "s"), "--replicates", "20"]
    piped = runner.invoke(app, base)
    assert piped.exit_code == 0, piped.output
    rows = _tsv(piped.stdout)
    assert rows[0][:3] == ["rank_crs", "encoder", "auroc"] and "\r" not in piped.output
    board = json.loads(runner.invoke(app, [*base, "--json"]).stdout)
    assert [r[1] for r in rows[1:4]] == [r["encoder"] for r in board]
    assert all(isinstance(r["CRS"], float) for r in board)
    quiet = runner.invoke(app, [*base, "--quiet"])
    assert quiet.exit_code == 0 and "wrote" not in quiet.stdout
