"""The consortium settings file: the packaged values, and a bad file refused with the key."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from crsbench.consortium.settings import DEFAULT_SETTINGS_PATH, load_settings
from crsbench.core.errors import ConfigError


def test_packaged_settings() -> None:
    s = load_settings()
    assert (s.version, s.min_cell_size, s.method, s.level) == ("v1", 10, "reml", 0.95)
    assert s.as_dict()["n_replicates"] == s.n_replicates


@pytest.mark.parametrize(("key", "value", "named"), [
    ("method", "pm", "method must be one of"),
    ("min_cell_size", 0, "min_cell_size must be a positive integer"),
    ("level", 95, "level must be in"),
])  # fmt: skip
def test_bad_settings_are_refused_by_key(tmp_path: Path, key, value, named) -> None:
    doc = yaml.safe_load(DEFAULT_SETTINGS_PATH.read_text())
    doc[key] = value
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match=named):
        load_settings(path)
