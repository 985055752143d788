"""The cohort verdict and the cohort-rule leaderboard are computed once and stored in
``STORE/computed/`` like the analyses: read back the second time, equal to what was computed,
and keyed by every input (the store's rows, ``cohort.json``, the compared store, the interval,
the rule, the crsbench version)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from crsbench.cohort.verdict_page import verdict_data
from crsbench.report.verdict_data import verdict_from_computed
from crsbench.stats.cohort_verdict import compute_verdict
from crsbench.stats.compute import stored_leaderboard, stored_verdict, verdict_inputs
from crsbench.stats.leaderboard import build_leaderboard
from crsbench.store import load_runs
from crsbench.store.computed import COMPUTED_DIR, input_key, read_computed
from crsbench.testing import simulate_runs, write_store


def _store(path: Path, rng_seed: int = 0) -> Path:
    df = simulate_runs(n_encoders=3, datasets=("chexpert",), seeds=3, rng_seed=rng_seed)
    write_store(df, path)
    return path


@pytest.fixture(scope="module")
def cohort(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = _store(tmp_path_factory.mktemp("cohort") / "store")
    (store / "cohort.json").write_text('{"n_images": 120, "task": "binary"}', encoding="utf-8")
    return store


def test_the_verdict_is_stored_once_and_read_back_equal(cohort: Path) -> None:
    said: list[str] = []
    first = verdict_data(cohort, say=said.append)
    again = verdict_data(cohort, say=said.append)
    assert said[0].startswith("computed the verdict") and said[1].startswith("read the stored")
    fresh = verdict_from_computed(compute_verdict(cohort))  # computed afresh, never stored
    for d in (first, again):
        pd.testing.assert_frame_equal(d.board, fresh.board, check_exact=True)
        pd.testing.assert_frame_equal(d.recal, fresh.recal, check_exact=True)
        assert d.sentences == fresh.sentences and d.recommended == fresh.recommended
        assert (d.interval, d.interval_note, d.ece_note) == (
            fresh.interval, fresh.interval_note, fresh.ece_note)  # fmt: skip
    assert fresh.cohort == {"n_images": 120, "task": "binary"}


def test_the_verdict_key_moves_with_every_input(cohort: Path, tmp_path: Path, monkeypatch) -> None:
    import crsbench

    def key(store: Path = cohort, compare: Path | None = None, interval: str = "test-patients"):
        return input_key(verdict_inputs(store, compare, interval))

    base = key()
    assert key() == base
    bench = _store(tmp_path / "bench", rng_seed=1)
    moved = {"compare": key(compare=bench), "interval": key(interval="seed-only"),
             "rows": key(store=_store(tmp_path / "other", rng_seed=2))}  # fmt: skip
    copy = _store(tmp_path / "copy")  # the same rows, another cohort.json
    (copy / "cohort.json").write_text('{"n_images": 121, "task": "binary"}', encoding="utf-8")
    moved["cohort.json"] = key(store=copy)
    monkeypatch.setattr(crsbench, "__version__", "0.0.0-other")
    moved["version"] = key()
    monkeypatch.undo()
    assert all(k != base for k in moved.values()), moved
    assert len(set(moved.values())) == len(moved)
    stored_verdict(cohort)
    assert (cohort / COMPUTED_DIR / f"{base}.zip").is_file()


def test_the_cohort_rule_board_is_stored_once_under_its_own_key(tmp_path: Path) -> None:
    store = _store(tmp_path / "s", rng_seed=3)
    runs = load_runs(store)
    said: list[str] = []
    kw = {"rule": "cohort", "n_replicates": 30, "interval": "seed-only"}
    first = stored_leaderboard(store, runs, say=said.append, **kw)
    again = stored_leaderboard(store, runs, say=said.append, **kw)
    assert said[0].startswith("computed the cohort-rule leaderboard")
    assert said[1].startswith("read the stored cohort-rule leaderboard")
    fresh = build_leaderboard(runs, rule="cohort", n_replicates=30, interval="seed-only",
                              store=store)  # fmt: skip
    assert fresh["crs_ci_low"].notna().sum() >= 2
    for board in (first, again):
        pd.testing.assert_frame_equal(board, fresh, check_exact=True)
        assert board.attrs == fresh.attrs
    (path,) = (store / COMPUTED_DIR).glob("*.zip")  # its own file, keyed with the rule
    assert read_computed(store, path.stem).inputs["rule"] == "cohort"
    assert said[0].endswith(str(path))
