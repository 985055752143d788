"""Fixtures of the feature-engine tests: test doubles loaded from ``feature_doubles.py``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).with_name("feature_doubles.py")


def _load():
    name = "crsbench_feature_test_doubles"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, _PATH)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


@pytest.fixture(scope="session")
def doubles():
    return _load()


@pytest.fixture(scope="session")
def doubles_path() -> Path:
    return _PATH


@pytest.fixture()
def images(tmp_path, doubles):
    return doubles.write_images(tmp_path / "imgs", 10)
