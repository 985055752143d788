"""The how-to pages' code runs: each titled block is written to a file and the page's script run.

The blocks are taken from the Markdown itself, so a page cannot drift from the code.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from .docs_support import run_script, write_examples


def test_add_encoder_example_registers_builds_and_reloads(tmp_path: Path) -> None:
    assert write_examples("add_encoder.md", tmp_path) == ["my_encoders.py", "use_my_encoder.py"]
    out = run_script("use_my_encoder.py", tmp_path).splitlines()
    assert out[0] == "64"
    # the page's printed shapes: 4 stages of 8/16/32/64 channels, taps at stages 1-3
    assert out[1] == "{0.25: (2, 8), 0.5: (2, 16), 0.75: (2, 32), 1.0: (2, 64)}"
    assert (tmp_path / "my_cnn.safetensors").is_file()


def test_add_dataset_example_loads_checks_and_splits(tmp_path: Path) -> None:
    names = write_examples("add_dataset.md", tmp_path)
    assert names == ["make_toy_data.py", "my_datasets.py", "use_my_dataset.py"]
    out = run_script("use_my_dataset.py", tmp_path).splitlines()
    assert out[0] == "60 multiclass ('0_none', '1_mild', '2_severe')"
    sizes = eval(out[1])  # {'train': .., 'val': .., 'calib': .., 'test': ..}
    assert sum(sizes.values()) == 60 and min(sizes.values()) > 0


def test_own_data_example_reads_a_folder_csv(tmp_path: Path) -> None:
    assert write_examples("own_data.md", tmp_path) == ["check_my_folder.py"]
    out = run_script("check_my_folder.py", tmp_path).splitlines()
    assert out == ["multiclass ('0', '1', '2') 40", "['age']"]


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small store at WORK/results/demo written by the real store writer, with its export."""
    from crsbench.store.writer import ResultsStore
    from crsbench.testing.simulated_store import simulate_runs, write_store

    work = tmp_path_factory.mktemp("store")
    store_dir = work / "results" / "demo"
    df = simulate_runs(n_encoders=3, datasets=("isic2019", "chexpert"), seeds=2)
    write_store(df, store_dir)
    with ResultsStore(store_dir, df["config_hash"].iloc[0]) as store:
        store.export("parquet", store_dir / "export")
    return work


def test_read_store_pandas_example(demo_store: Path) -> None:
    assert "read_with_pandas.py" in write_examples("read_store.md", demo_store)
    out = run_script("read_with_pandas.py", demo_store)
    assert out.splitlines()[0] == "['cards', 'meta', 'metrics', 'runs']"
    for encoder in ("resnet50", "vit_b16", "clip"):  # the pivot has one row per encoder
        assert encoder in out


@pytest.mark.skipif(importlib.util.find_spec("polars") is None, reason="polars not installed")
def test_read_store_polars_example(demo_store: Path) -> None:
    assert "read_with_polars.py" in write_examples("read_store.md", demo_store)
    assert "resnet50" in run_script("read_with_polars.py", demo_store)
