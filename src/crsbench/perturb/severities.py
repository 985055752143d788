"""The versioned severity table (``crsbench/resources/perturb/severities_v1.yaml``)."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

import yaml

from crsbench.core.errors import ConfigError
from crsbench.perturb import ops  # noqa: F401  (registers the perturbations)
from crsbench.perturb.registry import PERTURBATIONS, PerturbationSpec
from crsbench.protocol import SEVERITIES_VERSION
from crsbench.resources import resource_path

DEFAULT_TABLE_PATH = resource_path("perturb", f"severities_{SEVERITIES_VERSION}.yaml")


class SeverityTable(NamedTuple):
    """Severity values and the table's version string.

    Unpacks as ``table, version = load_severities()``.

    Attributes
    ----------
    table : Mapping[str, Mapping[int, Any]]
        perturbation name → severity (1, 2, 3, ...) → raw value from the file.
    version : str
        The ``version`` field of the file (enters feature-cache keys).
    """

    table: Mapping[str, Mapping[int, Any]]
    version: str

    def severities(self, name: str) -> tuple[int, ...]:
        """Severities defined for ``name`` (sorted)."""
        if name not in self.table:
            raise ConfigError(
                f"severity table {self.version!r} must define perturbation {name!r}. "
                f"Got only {sorted(self.table)}."
            )
        return tuple(sorted(self.table[name]))

    def value(self, name: str, severity: int) -> Any:
        """Raw value of ``(name, severity)``; raises :class:`ConfigError` if absent."""
        levels = self.severities(name)
        if severity not in levels:
            raise ConfigError(
                f"severity of {name!r} must be 0 (identity) or one of {levels} in table "
                f"{self.version!r}. Got {severity!r} instead."
            )
        return self.table[name][severity]

    @property
    def digest(self) -> str:
        """sha256 of the canonical JSON of version + values."""
        plain = {n: {str(s): v for s, v in sev.items()} for n, sev in self.table.items()}
        blob = json.dumps({"version": self.version, "table": plain}, sort_keys=True, default=dict)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def severity_value(spec: PerturbationSpec, table: SeverityTable, severity: int) -> Any:
    """Raw value of ``spec`` at ``severity``: from ``table`` if it names the perturbation,
    else from the ``severities`` it was registered with (one defined outside crsbench)."""
    if spec.name in table.table or spec.severities is None:
        return table.value(spec.name, severity)
    if severity not in spec.severities:
        raise ConfigError(
            f"severity of {spec.name!r} must be 0 (identity) or one of "
            f"{tuple(spec.severities)} (registered with it). Got {severity!r} instead."
        )
    return spec.severities[severity]


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return MappingProxyType({k: _freeze(v) for k, v in value.items()})
    return value


def build_table(raw: Mapping[str, Any], version: str, *, source: str = "<table>") -> SeverityTable:
    """Validate a ``{name: {severity: value}}`` mapping and freeze it.

    Parameters
    ----------
    raw : Mapping
        Perturbation name → severity → value (scalar or mapping, as in the YAML file).
    version : str
        Version string to attach.
    source : str
        Where the mapping came from, for messages.

    Returns
    -------
    SeverityTable
    """
    if not isinstance(version, str) or not version:
        raise ConfigError(f"{source}: version must be a non-empty string. Got {version!r} instead.")
    if not isinstance(raw, Mapping) or not raw:
        raise ConfigError(f"{source}: perturbations must be a non-empty mapping. Got {raw!r}.")
    table: dict[str, dict[int, Any]] = {}
    for name, levels in raw.items():
        spec = PERTURBATIONS.get(str(name))  # unknown name: RegistryError with did-you-mean
        if not isinstance(levels, Mapping) or not levels:
            raise ConfigError(
                f"{source}: perturbations.{name}.severities must be a non-empty mapping of "
                f"severity → value. Got {levels!r} instead."
            )
        parsed: dict[int, Any] = {}
        for severity, value in levels.items():
            if isinstance(severity, bool) or not isinstance(severity, int) or severity < 1:
                raise ConfigError(
                    f"{source}: perturbations.{name}.severities keys must be integers >= 1. "
                    f"Got {severity!r} instead."
                )
            try:
                spec.parse(value)
            except ConfigError as exc:
                raise ConfigError(
                    f"{source}: perturbations.{name}.severities.{severity}: {exc}"
                ) from None
            parsed[severity] = _freeze(dict(value) if isinstance(value, Mapping) else value)
        table[str(name)] = parsed
    return SeverityTable(
        table=MappingProxyType({n: MappingProxyType(v) for n, v in table.items()}), version=version
    )


def load_severities(path: str | Path | None = None) -> SeverityTable:
    """Load a severity table file with ``yaml.safe_load``.

    Parameters
    ----------
    path : str or Path, optional
        Default: the packaged ``severities_v1.yaml``.

    Returns
    -------
    SeverityTable
        ``(table, version)``.

    Raises
    ------
    ConfigError
        Missing file, invalid YAML, or a value out of range (the message names file and key).
    """
    if path is None:
        return _default_table()
    return _load(Path(path))


@functools.lru_cache(maxsize=1)
def _default_table() -> SeverityTable:
    return _load(DEFAULT_TABLE_PATH)


def _load(path: Path) -> SeverityTable:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"severity table {path}: cannot be read ({exc}).") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"severity table {path}: must be valid YAML. Got: {exc}") from None
    if not isinstance(doc, Mapping) or "version" not in doc or "perturbations" not in doc:
        raise ConfigError(
            f"severity table {path}: must be a mapping with keys 'version' and 'perturbations'. "
            f"Got {type(doc).__name__} with keys {sorted(doc) if isinstance(doc, Mapping) else []}."
        )
    perturbations = doc["perturbations"]
    if not isinstance(perturbations, Mapping):
        raise ConfigError(f"severity table {path}: perturbations must be a mapping.")
    raw: dict[str, Any] = {}
    for name, entry in perturbations.items():
        if not isinstance(entry, Mapping) or "severities" not in entry:
            raise ConfigError(
                f"severity table {path}: perturbations.{name} must be a mapping with key "
                f"'severities'. Got {entry!r} instead."
            )
        raw[name] = entry["severities"]
    return build_table(raw, str(doc["version"]), source=f"severity table {path}")


def as_table(table: SeverityTable | Mapping[str, Any] | None) -> SeverityTable:
    """Coerce an override (None → default table; a plain mapping → validated, version "custom")."""
    if table is None:
        return _default_table()
    if isinstance(table, SeverityTable):
        return table
    if isinstance(table, Mapping):
        return build_table(table, "custom")
    raise ConfigError(
        f"table must be a SeverityTable, a mapping or None. Got {type(table).__name__} instead."
    )
