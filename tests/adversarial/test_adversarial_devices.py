"""A device this machine lacks, or one that does not exist: refused, named, before any folder.

``torch.cuda.is_available`` is patched to False so the cases read the same on a GPU host.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.config import load_config
from crsbench.core.errors import ConfigError
from crsbench.encoders.devices import require_device

NO_GPU = "no CUDA GPU is visible on this machine (torch.cuda.is_available() is False)"


@pytest.fixture(autouse=True)
def _no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def _flat(text: str) -> str:
    return " ".join(text.split())


def _invoke(*args: object):
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result, _flat(result.output)


def _config(tmp_path: Path, device: str) -> Path:
    data = tmp_path / "datasets" / "isic"
    data.mkdir(parents=True)
    path = tmp_path / "config.yaml"
    path.write_text(
        f"encoders: [pixel]\ndevice: {device}\ncache_dir: {tmp_path / 'cache'}\n"
        f"output_dir: {tmp_path / 'results'}\ndatasets:\n  isic2019: {{root: {data}}}\n"
    )
    return path


def _created(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in tmp_path.iterdir() if p.name in ("cache", "results"))


def test_doctor_refuses_cuda_without_a_gpu(tmp_path: Path) -> None:
    result, said = _invoke("doctor", _config(tmp_path, "cuda"), "--no-hub-check")
    assert result.exit_code == 1, result.output
    assert f"missing device cuda: {NO_GPU}" in said and "put it in: device: in the config" in said
    assert _created(tmp_path) == []


def test_run_refuses_cuda_without_a_gpu_before_any_folder(tmp_path: Path) -> None:
    result, said = _invoke("run", _config(tmp_path, "cuda"), "--no-progress")
    assert result.exit_code == 2, result.output
    assert f"device: {NO_GPU}" in said and "Traceback" not in result.output
    assert _created(tmp_path) == []


def test_run_with_skip_missing_still_refuses_a_missing_gpu(tmp_path: Path) -> None:
    result, said = _invoke("run", _config(tmp_path, "cuda"), "--skip-missing", "--no-progress")
    assert result.exit_code == 2 and f"device: {NO_GPU}" in said, result.output
    assert _created(tmp_path) == []


def test_auto_and_cpu_pass_without_a_gpu() -> None:
    assert require_device("auto") == "auto" and require_device("cpu") == "cpu"


def test_unknown_device_in_the_config_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(_config(tmp_path, "tpu"))
    assert "device: Input should be 'auto', 'cpu' or 'cuda'. Got 'tpu' instead." in str(err.value)


@pytest.mark.parametrize(("device", "expected"), [
    ("tpu", "--device: unknown device; must be one of auto, cpu, cuda. Got 'tpu' instead."),
    ("cuda", f"--device: {NO_GPU}"),
])  # fmt: skip
def test_predict_refuses_a_device_before_writing(
    tmp_path: Path, device: str, expected: str
) -> None:
    out = tmp_path / "predictions.csv"
    result, said = _invoke("predict", "--model", tmp_path / "model", "--images", tmp_path,
                           "--out", out, "--device", device)  # fmt: skip
    assert result.exit_code == 2, result.output
    assert expected in said and "Traceback" not in result.output
    assert not out.exists()


def test_profile_refuses_cuda_before_any_folder(tmp_path: Path) -> None:
    images = tmp_path / "images"
    images.mkdir()
    csv = tmp_path / "cohort.csv"
    csv.write_text("path,label\na.png,0\nb.png,1\n")
    out = tmp_path / "profile"
    result, said = _invoke("profile", "--data", csv, "--images", images, "--label-columns",
                           "label", "--out", out, "--device", "cuda")  # fmt: skip
    assert result.exit_code == 2, result.output
    assert f"--device: {NO_GPU}" in said
    assert not out.exists()


# -- the cohort spec checks its own device: every entry point (YAML, options, Python) -----------


def _cohort_yaml(tmp_path: Path, device: str) -> Path:
    images = tmp_path / "images"
    images.mkdir(exist_ok=True)
    (tmp_path / "cohort.csv").write_text("path,label\na.png,0\nb.png,1\n")
    path = tmp_path / "cohort.yaml"
    path.write_text(f"data: cohort.csv\nimages: images\nlabel_columns: label\n"
                    f"out: {tmp_path / 'profile'}\ndevice: {device}\n")  # fmt: skip
    return path


@pytest.mark.parametrize(("device", "expected"), [
    ("cuda", f"device: {NO_GPU}"),
    ("tpu", "device: unknown device; must be one of auto, cpu, cuda. Got 'tpu' instead."),
])  # fmt: skip
def test_the_cohort_yaml_device_is_refused_naming_file_and_key(
    tmp_path: Path, device: str, expected: str
) -> None:
    from crsbench.cohort.spec import read_spec

    path = _cohort_yaml(tmp_path, device)
    with pytest.raises(ConfigError) as err:
        read_spec(path)
    assert str(err.value).startswith(f"{path}: {expected}")
    result, said = _invoke("profile", "--config", path)
    assert result.exit_code == 2 and f"{path}: {expected}" in said, result.output
    assert not (tmp_path / "profile").exists()


def test_a_cohort_spec_built_in_python_checks_its_device(tmp_path: Path) -> None:
    from crsbench.cohort.spec import CohortSpec

    with pytest.raises(ConfigError, match="device: no CUDA GPU is visible"):
        CohortSpec(data=tmp_path / "c.csv", images=tmp_path, label_columns=("y",), device="cuda")
    assert not any(tmp_path.iterdir())


def test_device_option_replaces_the_yaml_one_before_the_check(tmp_path: Path) -> None:
    from crsbench.cohort.spec import read_spec

    assert read_spec(_cohort_yaml(tmp_path, "cuda"), device="cpu").device == "cpu"
