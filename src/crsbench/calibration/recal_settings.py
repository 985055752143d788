"""The recalibration protocol: CV folds, loss, minimum split size and candidate grids.

The packaged ``crsbench/resources/calibration/recal_v1.yaml`` is the single home of these
values (docs/protocol.md section 10); its version is recorded with every recalibrated run row.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from crsbench.core.errors import ConfigError, DataError
from crsbench.core.settings_file import read_settings_mapping
from crsbench.protocol import RECAL_VERSION, RECALIBRATORS
from crsbench.resources import resource_path

DEFAULT_PROTOCOL_PATH = resource_path("calibration", f"recal_{RECAL_VERSION}.yaml")


class CalibrationSplitTooSmall(DataError):
    """The calibration split has fewer rows of some class (label side) than the protocol's
    minimum; the recalibrated metrics are NaN with this message as the reason."""


@dataclass(frozen=True)
class RecalProtocol:
    """Cross-validation settings of the recalibrators.

    Attributes
    ----------
    version : str
    loss : str
        Always ``"nll"`` (mean negative log-likelihood of the out-of-fold predictions).
    n_folds : int
    min_per_class : int
    grids : mapping method → tuple of constructor-parameter mappings (the candidates)
    """

    version: str
    loss: str
    n_folds: int
    min_per_class: int
    grids: Mapping[str, tuple[Mapping[str, float], ...]]

    def summary(self) -> dict[str, Any]:
        """JSON-serialisable fields recorded with each recalibrated row."""
        return {
            "protocol": self.version,
            "loss": self.loss,
            "n_folds": self.n_folds,
            "min_per_class": self.min_per_class,
        }


def load_recal_protocol(path: str | Path | None = None) -> RecalProtocol:
    """Load a recalibration protocol file (default: the packaged ``recal_v1.yaml``).

    Raises
    ------
    ConfigError
        Unreadable file, invalid YAML, or a missing / out-of-range key (the message names it).
    """
    if path is None:
        return _default()
    return _load(Path(path))


@functools.lru_cache(maxsize=1)
def _default() -> RecalProtocol:
    return _load(DEFAULT_PROTOCOL_PATH)


def _load(path: Path) -> RecalProtocol:
    keys = ("version", "loss", "n_folds", "min_per_class", "grids")
    doc = read_settings_mapping(path, "recalibration protocol", keys)
    if doc["loss"] != "nll":
        raise ConfigError(
            f"recalibration protocol {path}: loss must be 'nll'. Got {doc['loss']!r}."
        )
    n_folds, min_n = doc["n_folds"], doc["min_per_class"]
    if not isinstance(n_folds, int) or n_folds < 2:
        raise ConfigError(f"recalibration protocol {path}: n_folds must be an integer >= 2.")
    if not isinstance(min_n, int) or min_n < n_folds:
        raise ConfigError(
            f"recalibration protocol {path}: min_per_class must be an integer >= n_folds "
            f"({n_folds}). Got {min_n!r} instead."
        )
    grids: dict[str, tuple[Mapping[str, float], ...]] = {
        m: _candidates(path, m, doc["grids"].get(m)) for m in RECALIBRATORS
    }
    return RecalProtocol(str(doc["version"]), "nll", n_folds, min_n, grids)


def _candidates(path: Path, method: str, spec: Any) -> tuple[Mapping[str, float], ...]:
    """``[{}]`` stays one candidate; ``{param: [values]}`` becomes every combination."""
    if spec == [{}]:
        return ({},)
    if not isinstance(spec, Mapping) or not spec:
        raise ConfigError(
            f"recalibration protocol {path}: grids.{method} must be [{{}}] or a mapping of "
            f"parameter → list of values. Got {spec!r} instead."
        )
    for name, values in spec.items():
        if not isinstance(values, list) or not values or any(v < 0 for v in values):
            raise ConfigError(
                f"recalibration protocol {path}: grids.{method}.{name} must be a non-empty list "
                f"of non-negative numbers. Got {values!r} instead."
            )
    names = list(spec)
    return tuple(
        {n: float(v) for n, v in zip(names, combo, strict=True)}
        for combo in itertools.product(*(spec[n] for n in names))
    )


def check_calibration_size(y: np.ndarray, task: str, n_outputs: int, min_per_class: int) -> None:
    """Refuse a calibration split with fewer than ``min_per_class`` rows of some class.

    Multi-class: rows of each of the ``n_outputs`` classes. Multi-label: positives and
    negatives of each label among its labelled rows.

    Raises
    ------
    CalibrationSplitTooSmall
        Naming the first class (label) below the minimum and its count.
    """
    if task == "multiclass":
        counts = np.bincount(np.asarray(y, dtype=np.int64), minlength=n_outputs)
        for k, n in enumerate(counts):
            if n < min_per_class:
                raise CalibrationSplitTooSmall(
                    f"calibration split too small: class {k} has n={n} < {min_per_class}"
                )
        return
    for j in range(n_outputs):
        col = y[:, j][~np.isnan(y[:, j])]
        for side, n in (("positives", int((col == 1).sum())), ("negatives", int((col == 0).sum()))):
            if n < min_per_class:
                raise CalibrationSplitTooSmall(
                    f"calibration split too small: label {j} has n={n} {side} < {min_per_class}"
                )
