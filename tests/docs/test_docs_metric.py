"""docs/add_metric.md does what it says: its patches, applied to a copy of ``src/crsbench``,
add a ``balanced_accuracy`` column that is computed, stored, aggregated, exported and read
back, with the page's hand-worked value; a whole run fills it for every row.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from .docs_support import DOCS, REPO, write_examples

PAGE = "add_metric.md"


def _text() -> str:
    return (DOCS / PAGE).read_text(encoding="utf-8")


def _run(argv: list[str], cwd: Path, src: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(src), "TYPER_USE_RICH": "0", "COLUMNS": "200"}
    done = subprocess.run([sys.executable, *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, f"{argv} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def patched(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of src/crsbench with the page's patches applied (``git apply``, as the page says)."""
    root = tmp_path_factory.mktemp("patched")
    shutil.copytree(REPO / "src" / "crsbench", root / "src" / "crsbench",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    patches = re.findall(r"```diff\n(.*?)```", _text(), re.S)
    assert len(patches) == 3
    (root / "page.patch").write_text("".join(patches), encoding="utf-8")
    done = subprocess.run(["git", "apply", "--verbose", "page.patch"], cwd=root,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return root


def test_the_patched_copy_scores_stores_and_reads_the_new_column(patched, tmp_path):
    assert write_examples(PAGE, tmp_path) == ["check_my_metric.py", "read_my_metric.py"]
    out = _run(["check_my_metric.py"], tmp_path, patched / "src").splitlines()
    assert out == ["0.3889", "0.3889", "True"]  # (2/3 + 1/2 + 0) / 3


def test_the_new_function_agrees_with_an_independent_balanced_accuracy(patched):
    from sklearn.metrics import balanced_accuracy_score

    path = patched / "src" / "crsbench" / "metrics" / "balanced_accuracy.py"
    spec = importlib.util.spec_from_file_location("page_balanced_accuracy", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, 200)
    prob = rng.dirichlet(np.ones(4), 200)
    expected = balanced_accuracy_score(y, prob.argmax(axis=1))
    assert module.balanced_accuracy(y, prob, "multiclass") == pytest.approx(expected)
    labels = rng.integers(0, 2, (200, 3)).astype(float)
    labels[:5, 0] = np.nan  # missing labels are left out
    scores = rng.uniform(size=(200, 3))
    expected = []
    for j in range(3):
        keep = ~np.isnan(labels[:, j])
        t, p = labels[keep, j] == 1, scores[keep, j] >= 0.5
        expected.append((np.sum(t & p) / np.sum(t) + np.sum(~t & ~p) / np.sum(~t)) / 2)
    assert module.balanced_accuracy(labels, scores, "multilabel") == pytest.approx(
        np.mean(expected)
    )


@pytest.mark.slow  # a whole run (extraction, probes, recalibration): ~15 s quiet
def test_a_run_with_the_patched_copy_fills_the_column_for_every_row(patched, tmp_path):
    from crsbench.datasets.synthetic import write_all

    write_examples(PAGE, tmp_path)
    config = re.search(r'```yaml title="my_metric.yaml"\n(.*?)```', _text(), re.S).group(1)
    (tmp_path / "my_metric.yaml").write_text(config, encoding="utf-8")
    write_all(tmp_path / "data", size={"isic2019": 60, "side": 48}, seed=0, names=("isic2019",))
    src = patched / "src"
    _run(["-c", "from crsbench.cli import main; main()", "run", "my_metric.yaml",
          "--no-progress"], tmp_path, src)  # fmt: skip
    table = _run(["read_my_metric.py"], tmp_path, src).splitlines()
    assert table[0].split() == ["condition", "severity", "probe", "recalibrator", "auroc",
                                "balanced_accuracy"]  # fmt: skip
    rows = [line.split() for line in table[1:]]
    assert {r[0] for r in rows} == {"clean", "jpeg"}
    for row in rows:  # defined exactly where AUROC is, and a share
        auroc, balanced = float(row[4]), float(row[5])
        assert np.isnan(auroc) == np.isnan(balanced)
        assert np.isnan(balanced) or 0.0 <= balanced <= 1.0
