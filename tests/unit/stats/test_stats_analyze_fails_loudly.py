"""``run_analyses`` skips an analysis only for a documented reason (a crsbench error such as
too few encoders); any other exception, e.g. a numpy shape bug, fails the command."""

from __future__ import annotations

import pandas as pd
import pytest

from crsbench.core.errors import DataError
from crsbench.stats import analyze_paper
from crsbench.stats.analyze import run_analyses
from crsbench.testing.simulated_store import simulate_runs


@pytest.fixture(scope="module")
def runs() -> pd.DataFrame:
    return simulate_runs(n_encoders=4, datasets=("isic2019",), seeds=2, rng_seed=3)


def test_a_documented_reason_is_recorded_as_skipped(runs, tmp_path, monkeypatch):
    def too_few(*args, **kwargs):
        raise DataError("needs at least two medical encoders")

    monkeypatch.setattr(analyze_paper, "layer_depth", too_few)
    summary = run_analyses(runs, tmp_path, n_replicates=50)
    assert summary["skipped"]["layer_depth"] == "needs at least two medical encoders"
    assert "leaderboard" in summary["analyses"]  # the others still ran


def test_a_bug_fails_the_command_instead_of_a_skip(runs, tmp_path, monkeypatch):
    def shape_bug(*args, **kwargs):
        import numpy as np

        return np.ones((2, 3)) @ np.ones((2, 3))  # ValueError: matmul shapes

    monkeypatch.setattr(analyze_paper, "layer_depth", shape_bug)
    with pytest.raises(ValueError, match="matmul"):
        run_analyses(runs, tmp_path, n_replicates=50)
    assert not (tmp_path / "summary.json").exists()  # no summary claims the run succeeded
