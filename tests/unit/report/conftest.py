"""Session fixtures of the report tests: small synthetic stores and the reports built on them."""

from __future__ import annotations

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
    from crsbench.report import build_report

    return build_report(small_store, tmp_path_factory.mktemp("small_out"), n_replicates=60)


@pytest.fixture(scope="session")
def big_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``index.html`` of a 15 encoders × 4 datasets store (the layout check)."""
    from crsbench.report import build_report

    store = make_store(tmp_path_factory.mktemp("big") / "store", 15, BIG_DATASETS, 2)
    return build_report(store, tmp_path_factory.mktemp("big_out"), n_replicates=40)
