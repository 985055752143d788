"""``pip install crsbench`` (no extras) into a fresh virtual environment scores, analyses and
reports a results store: torch is not installed there, and the commands that need it say which
extra to install. Needs the package registry (slow, network)."""

from __future__ import annotations

import shutil
import subprocess
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.network]


def _run(argv: list, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True,
                          timeout=1800)  # fmt: skip


def test_the_core_install_reads_scores_and_reports_without_torch(tmp_path):
    venv.create(tmp_path / "venv", with_pip=True)
    py = tmp_path / "venv" / "bin" / "python"
    source = tmp_path / "source"  # a copy: pip builds in the tree, the checkout stays untouched
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(REPO / "src", source / "src", ignore=skip)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    done = _run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", source], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    listed = _run([py, "-m", "pip", "list", "--format=freeze"], tmp_path).stdout.lower()
    assert "torch==" not in listed and "timm==" not in listed, listed
    made = _run([py, "-c", "from crsbench.testing.simulated_store import simulate_runs, "
                 "write_store; write_store(simulate_runs(n_encoders=3, seeds=2), 'store')"],
                tmp_path)  # fmt: skip
    assert made.returncode == 0, made.stderr[-3000:]
    cli = tmp_path / "venv" / "bin" / "crsbench"
    for argv in (["score", "--store", "store"], ["report", "--store", "store", "--out", "rep"]):
        done = _run([cli, *argv, "--replicates", "200"], tmp_path)
        assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "rep" / "index.html").is_file()
    refused = _run([cli, "demo", "--out", "d"], tmp_path)
    assert refused.returncode == 2
    said = " ".join((refused.stdout + refused.stderr).split())  # unwrapped
    assert "pip install 'crsbench[encoders]'" in said, said
    assert not (tmp_path / "d").exists()
