"""The operating-point settings: targets, tolerance and the fewest positives per label
(``docs/scoring.md``, "Operating points").

The packaged ``crsbench/resources/operating_points/v1.yaml`` is the single home of these
values; its version is recorded in every operating-point row and in ``summary.json``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from crsbench.core.errors import ConfigError
from crsbench.core.settings_file import read_settings_mapping
from crsbench.resources import resource_label, resource_path

#: The packaged settings version.
OPERATING_POINTS_VERSION = "v1"
_KEYS = ("version", "target_sensitivity", "target_specificity", "tolerance", "min_positives")


@dataclass(frozen=True)
class OperatingPointSettings:
    """What the operating-point analysis uses.

    Attributes
    ----------
    version : str
    target_sensitivity, target_specificity : float
        The operating points picked on validation, in (0, 1).
    tolerance : float
        Largest sensitivity lost under shift with which the point is still kept, in [0, 1).
    min_positives : int
        Fewest positives of a label on validation, test and the shift target (≥ 1).
    """

    version: str
    target_sensitivity: float
    target_specificity: float
    tolerance: float
    min_positives: int


def load_operating_point_settings(path: str | Path | None = None) -> OperatingPointSettings:
    """Load an operating-point settings file (default: the packaged ``v1.yaml``).

    Raises
    ------
    ConfigError
        Unreadable file, invalid YAML, or a missing / out-of-range key (the message names it).
    """
    if path is None:
        return _default()
    return _load(Path(path), str(path))


@functools.lru_cache(maxsize=1)
def _default() -> OperatingPointSettings:
    name = f"{OPERATING_POINTS_VERSION}.yaml"
    return _load(resource_path("operating_points", name), resource_label("operating_points", name))


def _load(path: Path, label: str) -> OperatingPointSettings:
    doc = read_settings_mapping(path, "operating-point settings", _KEYS, label)
    for key, lo, hi in (("target_sensitivity", 0, 1), ("target_specificity", 0, 1),
                        ("tolerance", -1e-12, 1)):  # fmt: skip
        v = doc[key]
        if isinstance(v, bool) or not isinstance(v, int | float) or not lo < v < hi:
            raise ConfigError(f"operating-point settings {label}: {key} must be a number in "
                              f"({max(lo, 0)}, {hi}). Got {v!r} instead.")  # fmt: skip
    n = doc["min_positives"]
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"operating-point settings {label}: min_positives must be an integer "
                          f">= 1. Got {n!r} instead.")  # fmt: skip
    return OperatingPointSettings(str(doc["version"]), float(doc["target_sensitivity"]),
                                  float(doc["target_specificity"]), float(doc["tolerance"]), n)  # fmt: skip
