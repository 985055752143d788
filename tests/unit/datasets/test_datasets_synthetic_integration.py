"""The synthetic writer and the adapters agree: every synthetic layout loads and checks OK."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.datasets import check, load

NAMES = ("isic2019", "aptos2019", "chexpert", "mimic_cxr", "nih_cxr14", "padchest", "vindr_cxr")
TINY = {
    "side": 32,
    "isic2019": 16,
    "aptos2019": 10,
    "chexpert_train": 12,
    "chexpert_valid": 4,
    "mimic_cxr": 10,
    "nih_cxr14": 10,
    "padchest": 10,
    "vindr_cxr": 10,
}


def _assert_loads_and_checks(root: Path, name: str) -> None:
    data = load(name, root)
    assert len(data) > 0 and len(np.unique(data.image_ids)) == len(data)
    assert all(Path(p).is_file() for p in data.paths)
    if data.task == "multiclass":
        np.testing.assert_array_equal(data.labels.sum(axis=1), 1.0)
    else:
        assert set(np.unique(data.labels[~np.isnan(data.labels)])) <= {0.0, 1.0}
    report = check(name, root, decode=True)
    assert report.ok, report.to_text()
    assert report.n_images == len(data)


@pytest.fixture(scope="module")
def tiny_synth(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    synthetic = pytest.importorskip("crsbench.datasets.synthetic")
    out = tmp_path_factory.mktemp("synth")
    return synthetic.write_all(out, size=TINY, seed=0)


@pytest.mark.parametrize("name", NAMES)
def test_tiny_synthetic_layouts_load_and_check(tiny_synth: dict[str, Path], name: str) -> None:
    _assert_loads_and_checks(tiny_synth[name], name)


@pytest.mark.slow
def test_synth_small_cli_then_load_and_check_all(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["synth", "--out", str(tmp_path), "--size", "small"])
    assert result.exit_code == 0, result.output
    for name in NAMES:
        _assert_loads_and_checks(tmp_path / name, name)
        result = runner.invoke(app, ["datasets", "check", name, "--root", str(tmp_path / name)])
        assert result.exit_code == 0, result.output


@pytest.mark.parametrize("name", ["nih_cxr14", "padchest", "vindr_cxr"])
def test_datasets_check_cli_exits_0_on_each_shift_twin(
    tiny_synth: dict[str, Path], name: str
) -> None:
    result = CliRunner().invoke(app, ["datasets", "check", name, "--root", str(tiny_synth[name])])
    assert result.exit_code == 0, result.output
    assert "OK" in result.output


def test_vindr_kaggle_twin_loads_checks_and_matches_the_real_columns(tmp_path: Path) -> None:
    pytest.importorskip("pydicom")
    from crsbench.datasets.synthetic import write_vindr_cxr

    root = write_vindr_cxr(tmp_path / "vindr", size=TINY, layout="kaggle")
    header = (root / "train.csv").read_text().splitlines()[0]
    assert header == "image_id,class_name,class_id,rad_id,x_min,y_min,x_max,y_max"
    assert not (root / "annotations").exists() and not (root / "test").exists()
    _assert_loads_and_checks(root, "vindr_cxr")
    assert load("vindr_cxr", root).notes[0].startswith("kaggle layout")
