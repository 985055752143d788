"""The consortium's user-configurable values, read from a versioned data file.

``resources/consortium/v1.yaml`` holds the small-cell threshold of site summaries, the
bootstrap replicates behind a site's variances, the default between-site variance method,
the nominal level and the site-bootstrap replicates of P(rank 1). The values used are
recorded in every summary and every consortium table (:meth:`ConsortiumSettings.as_dict`).
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass
from pathlib import Path

from crsbench.consortium.meta import METHODS
from crsbench.core.errors import ConfigError
from crsbench.core.settings_file import read_settings_mapping
from crsbench.resources import resource_path

DEFAULT_SETTINGS_PATH = resource_path("consortium", "v1.yaml")
_KEYS = ("version", "min_cell_size", "n_replicates", "method", "level", "n_site_replicates")


@dataclass(frozen=True)
class ConsortiumSettings:
    """The values of one consortium settings file (see ``resources/consortium/v1.yaml``)."""

    version: str
    min_cell_size: int
    n_replicates: int
    method: str
    level: float
    n_site_replicates: int

    def as_dict(self) -> dict[str, object]:
        """The values, as recorded in summaries and tables."""
        return asdict(self)


def load_settings(path: str | Path | None = None) -> ConsortiumSettings:
    """Load a settings file (default: the packaged ``v1.yaml``).

    Raises
    ------
    ConfigError
        Unreadable file, invalid YAML, a missing key or an out-of-range value (named).
    """
    return _default() if path is None else _load(Path(path))


@functools.lru_cache(maxsize=1)
def _default() -> ConsortiumSettings:
    return _load(DEFAULT_SETTINGS_PATH)


def _load(path: Path) -> ConsortiumSettings:
    doc = read_settings_mapping(path, "consortium settings", _KEYS)
    for key in ("min_cell_size", "n_replicates", "n_site_replicates"):
        if not isinstance(doc[key], int) or doc[key] < 1:
            raise ConfigError(f"consortium settings {path}: {key} must be a positive integer. "
                              f"Got {doc[key]!r} instead.")  # fmt: skip
    if doc["method"] not in METHODS:
        raise ConfigError(f"consortium settings {path}: method must be one of {list(METHODS)}. "
                          f"Got {doc['method']!r} instead.")  # fmt: skip
    if not isinstance(doc["level"], float) or not 0 < doc["level"] < 1:
        raise ConfigError(f"consortium settings {path}: level must be in (0, 1). "
                          f"Got {doc['level']!r} instead.")  # fmt: skip
    return ConsortiumSettings(**{k: doc[k] for k in _KEYS})
