"""Packaged data lives in one place (crsbench/resources) and every file there ships."""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest

import crsbench
from crsbench.resources import resource_file, resource_label, resource_names, resource_path

PACKAGE = Path(crsbench.__file__).parent
PYPROJECT = PACKAGE.parents[1] / "pyproject.toml"
DATA_SUFFIXES = {".yaml", ".yml", ".json", ".css", ".js", ".csv"}


def _data_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and p.suffix in DATA_SUFFIXES]


def test_every_data_file_is_under_resources() -> None:
    outside = [p for p in _data_files(PACKAGE) if "resources" not in p.relative_to(PACKAGE).parts]
    assert outside == []


def test_package_data_ships_every_resource() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    globs = tomllib.loads(PYPROJECT.read_text())["tool"]["setuptools"]["package-data"]
    patterns = globs["crsbench.resources"]
    root = PACKAGE / "resources"
    files = [p.relative_to(root).as_posix() for p in _data_files(root)]
    assert len(files) >= 11
    unshipped = [f for f in files if not any(fnmatch.fnmatch(f, g) for g in patterns)]
    assert unshipped == []


def test_loader_names_reads_and_labels_the_shipped_files() -> None:
    assert resource_names("configs") == ["demo", "paper"]
    assert resource_names("label_maps") == ["nih_cxr14_v1", "padchest_v1", "vindr_cxr_v1"]
    assert resource_names("report", ".css") == ["report"]
    assert resource_file("anchors", "v1.yaml").read_text(encoding="utf-8").count("version: v1")
    assert not resource_file("anchors", "v9.yaml").is_file()
    assert resource_path("perturb", "severities_v1.yaml").is_file()
    assert resource_label("configs", "demo.yaml") == "crsbench/resources/configs/demo.yaml"


def test_the_data_loaders_read_the_versions_the_protocol_names() -> None:
    from crsbench import protocol
    from crsbench.calibration.recal_settings import load_recal_protocol
    from crsbench.perturb import load_severities
    from crsbench.scoring import load_anchors

    assert load_severities().version == protocol.SEVERITIES_VERSION
    assert load_recal_protocol().version == protocol.RECAL_VERSION
    assert load_anchors().version == protocol.ANCHORS_VERSION
