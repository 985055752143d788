"""Reading a versioned settings file: one YAML mapping that must hold a fixed set of keys."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from crsbench.core.errors import ConfigError


def read_settings_mapping(path: Path, what: str, keys: Sequence[str],
                          label: str | None = None) -> Mapping[str, Any]:  # fmt: skip
    """The YAML mapping in ``path``, refused unless every key of ``keys`` is in it.

    Parameters
    ----------
    path : Path
        The settings file.
    what : str
        What the file is, for the message (``"consortium settings"``).
    keys : sequence of str
        The keys the mapping must hold (further checks are the caller's).
    label : str, optional
        How the file is named in messages (default: ``path``).

    Raises
    ------
    ConfigError
        Unreadable file, invalid YAML, or not a mapping with every key (named).
    """
    name = label if label is not None else str(path)
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{what} {name}: cannot be read ({exc}).") from None
    if not isinstance(doc, Mapping) or any(k not in doc for k in keys):
        raise ConfigError(f"{what} {name}: must be a mapping with keys {tuple(keys)}.")
    return doc
