"""What each encoder saw while it was pretrained: the versioned catalogue and its overlap levels.

The facts live in a shipped YAML file (``crsbench/resources/pretraining/v1.yaml``), one entry
per registered encoder name: its pretraining sources (each with a citation or link), and for each
CRS-Bench dataset it may have seen, a level and why. This module only reads and validates that
file, so the analyses and the report can flag results without importing the encoder registry;
the encoder card exposes the same entry (``EncoderCard.pretraining``).

Levels, from most to least certain overlap:

- ``trained_on``: the model card or paper lists the dataset (or its archive) among the
  pretraining or checkpoint-selection data;
- ``possible``: the pretraining data include archives that may hold the evaluation images;
- ``none_known``: the pretraining data are described and no overlap is known;
- ``unknown``: the pretraining data are not described well enough to tell.

``trained_on`` and ``possible`` are *flagged*: a result on such a dataset may be inflated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from crsbench.core.errors import ConfigError
from crsbench.protocol import PRETRAINING_VERSION
from crsbench.resources import resource_file, resource_label

LEVELS: tuple[str, ...] = ("trained_on", "possible", "none_known", "unknown")
FLAGGED_LEVELS: frozenset[str] = frozenset({"trained_on", "possible"})
#: How a level reads in a table or sentence.
LEVEL_WORDS = {"trained_on": "trained on", "possible": "possible overlap",
               "none_known": "none known", "unknown": "unknown"}  # fmt: skip
_ENTRY_KEYS = {"family", "sources", "datasets", "elsewhere", "note"}


@dataclass(frozen=True)
class PretrainingSource:
    """One pretraining data source and where that is stated (citation or link)."""

    data: str
    reference: str


@dataclass(frozen=True)
class Overlap:
    """The overlap level of one (encoder, dataset) and why."""

    level: str
    why: str

    @property
    def flagged(self) -> bool:
        """True for ``trained_on`` and ``possible``."""
        return self.level in FLAGGED_LEVELS


@dataclass(frozen=True)
class PretrainingEntry:
    """What is known about one encoder's pretraining data."""

    encoder: str
    family: str
    sources: tuple[PretrainingSource, ...]
    datasets: dict[str, Overlap] = field(default_factory=dict)
    elsewhere: str = "unknown"
    note: str = ""

    def overlap(self, dataset: str) -> Overlap:
        """Level of ``dataset``: its own entry, else the ``elsewhere`` level."""
        if dataset in self.datasets:
            return self.datasets[dataset]
        why = "no overlap reported" if self.elsewhere == "none_known" else (
            "pretraining data not described well enough to tell")  # fmt: skip
        return Overlap(self.elsewhere, why)


@dataclass(frozen=True)
class PretrainingCatalog:
    """The loaded catalogue: its version and one entry per encoder name."""

    version: str
    entries: dict[str, PretrainingEntry]
    description: str = ""

    def overlap(self, encoder: str, dataset: str) -> Overlap:
        """Level of (``encoder``, ``dataset``); an encoder absent from the catalogue is unknown."""
        entry = self.entries.get(encoder)
        if entry is None:
            return Overlap("unknown", f"encoder not in pretraining catalogue {self.version}")
        return entry.overlap(dataset)


def _level(value: object, where: str) -> str:
    if value not in LEVELS:
        raise ConfigError(f"{where} must be one of {list(LEVELS)}. Got {value!r} instead.")
    return str(value)


def _text(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where} must be a non-empty string. Got {value!r} instead.")
    return value.strip()


def _sources(rows: object, where: str) -> tuple[PretrainingSource, ...]:
    if not isinstance(rows, list) or not rows:
        raise ConfigError(f"{where} must be a non-empty list. Got {rows!r} instead.")
    out = []
    for i, row in enumerate(rows):
        at = f"{where}[{i}]"
        if not isinstance(row, dict) or set(row) != {"data", "reference"}:
            raise ConfigError(f"{at} must have exactly the keys data, reference. Got {row!r}.")
        out.append(PretrainingSource(_text(row["data"], f"{at}.data"),
                                     _text(row["reference"], f"{at}.reference")))  # fmt: skip
    return tuple(out)


def _overlaps(rows: object, where: str) -> dict[str, Overlap]:
    if rows is None:
        return {}
    if not isinstance(rows, dict):
        raise ConfigError(f"{where} must be a mapping dataset → level. Got {rows!r} instead.")
    out = {}
    for ds, row in rows.items():
        at = f"{where}.{ds}"
        if not isinstance(row, dict) or set(row) != {"level", "why"}:
            raise ConfigError(f"{at} must have exactly the keys level, why. Got {row!r}.")
        out[str(ds)] = Overlap(_level(row["level"], f"{at}.level"), _text(row["why"], f"{at}.why"))
    return out


def _entry(name: str, doc: object, where: str) -> PretrainingEntry:
    if not isinstance(doc, dict):
        raise ConfigError(f"{where} must be a mapping. Got {doc!r} instead.")
    unknown = set(doc) - _ENTRY_KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}.")
    return PretrainingEntry(
        encoder=name,
        family=_text(doc.get("family"), f"{where}.family"),
        sources=_sources(doc.get("sources"), f"{where}.sources"),
        datasets=_overlaps(doc.get("datasets"), f"{where}.datasets"),
        elsewhere=_level(doc.get("elsewhere"), f"{where}.elsewhere"),
        note=str(doc.get("note") or "").strip(),
    )


def catalog_from_dict(data: object, source: str = "<pretraining>") -> PretrainingCatalog:
    """Validate a parsed catalogue; errors name ``source`` and the key at fault."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source} must hold a mapping. Got {type(data).__name__} instead.")
    unknown = set(data) - {"version", "description", "encoders"}
    if unknown:
        raise ConfigError(f"{source}: unknown key(s) {sorted(unknown)}.")
    encoders = data.get("encoders")
    if not isinstance(encoders, dict) or not encoders:
        raise ConfigError(f"{source}: key 'encoders' must be a non-empty mapping.")
    entries = {
        str(n): _entry(str(n), doc, f"{source}: encoders.{n}") for n, doc in encoders.items()
    }
    return PretrainingCatalog(
        version=_text(data.get("version"), f"{source}: version"),
        entries=entries,
        description=str(data.get("description") or "").strip(),
    )


def load_pretraining(source: str | Path | PretrainingCatalog | None = None) -> PretrainingCatalog:
    """Load the catalogue: ``None`` = the shipped current version, a version name, or a path.

    Raises
    ------
    ConfigError
        The file is missing, not YAML, or invalid (the message names the file and key).

    Examples
    --------
    >>> load_pretraining().overlap("rad_dino", "mimic_cxr").level
    'trained_on'
    """
    if isinstance(source, PretrainingCatalog):
        return source
    source = PRETRAINING_VERSION if source is None else source
    path = Path(source)
    if not path.suffix and not path.exists():
        res = resource_file("pretraining", f"{source}.yaml")
        if not res.is_file():
            raise ConfigError(f"pretraining catalogue '{source}' is not shipped with crsbench.")
        text, name = (
            res.read_text(encoding="utf-8"),
            resource_label("pretraining", f"{source}.yaml"),
        )
    else:
        if not path.is_file():
            raise ConfigError(f"pretraining catalogue {path} must exist. It does not.")
        text, name = path.read_text(encoding="utf-8"), str(path)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{name} must be valid YAML: {exc}") from exc
    return catalog_from_dict(data, name)


def overlap_summary(
    encoder: str, datasets: list[str], catalog: PretrainingCatalog | None = None
) -> str:
    """``"mimic_cxr (trained on); chexpert (possible overlap)"``: the flagged datasets of
    ``encoder`` among ``datasets`` (empty when none is flagged)."""
    cat = load_pretraining(catalog)
    parts = []
    for ds in datasets:
        ov = cat.overlap(encoder, ds)
        if ov.flagged:
            parts.append(f"{ds} ({LEVEL_WORDS[ov.level]})")
    return "; ".join(parts)
