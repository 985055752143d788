"""Run records: the identity of one probe fit + evaluation, its metrics and its provenance.

A run is identified by eleven columns (:data:`IDENTITY_COLUMNS`) and the config hash; its
``run_key`` is the sha256 of both (:func:`make_run_key`), so a planner can compute the keys of
work still to do before running anything.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from typing import Any

from crsbench.core.errors import StoreError
from crsbench.core.types import SPLIT_NAMES
from crsbench.protocol import CLEAN, FROZEN, REGIMES, UNPERTURBED_CONDITIONS
from crsbench.store.columns import (
    FLOAT_IDENTITY_COLUMNS,
    IDENTITY_COLUMNS,
    INT_IDENTITY_COLUMNS,
    METRIC_COLUMNS,
    REQUIRED_METRICS,
    SCHEMA_VERSION,
    TEXT_IDENTITY_COLUMNS,
)
from crsbench.store.details import RunDetails

#: Keys of ``details["n_quarantined"]``: the splits and the shift target's rows.
QUARANTINE_KEYS: tuple[str, ...] = (*SPLIT_NAMES, "shift")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def _num(x: float) -> float:
    """Normalise a float so that 0.1, 1e-1 and 0.1000000000000001 key alike."""
    return float(f"{float(x):.12g}")


def make_run_key(identity: Mapping[str, Any], config_hash: str) -> str:
    """sha256 hex of the identity columns and the config hash.

    The hashed text is the compact JSON list of the :data:`IDENTITY_COLUMNS` values in that
    order (strings as strings, ``seed``/``severity`` as ints, ``layer``/``fraction`` as floats
    normalised to 12 significant digits) followed by ``config_hash``.

    Parameters
    ----------
    identity : Mapping
        At least the :data:`IDENTITY_COLUMNS`; extra keys are ignored.
    config_hash : str
        :func:`crsbench.config.config_hash` of the config that planned the run.
    """
    return key_from_values(tuple(identity[c] for c in IDENTITY_COLUMNS), config_hash)


_CASTS = tuple(
    _num if c in FLOAT_IDENTITY_COLUMNS else int if c in INT_IDENTITY_COLUMNS else str
    for c in IDENTITY_COLUMNS
)


def key_from_values(values: Sequence[Any], config_hash: str) -> str:
    """:func:`make_run_key` from the identity values in :data:`IDENTITY_COLUMNS` order."""
    canon = [cast(v) for cast, v in zip(_CASTS, values, strict=True)]
    canon.append(str(config_hash))
    text = json.dumps(canon, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def keys_for_columns(columns: Mapping[str, Any], config_hash: str) -> list[str]:
    """:func:`make_run_key` for many rows at once (identical output, far faster).

    ``columns`` maps each identity column to a pandas Series; each distinct value is
    JSON-encoded once and the texts are joined column-wise before hashing.
    """
    text = None
    for col, cast in zip(IDENTITY_COLUMNS, _CASTS, strict=True):
        series = columns[col]
        encoded = {u: json.dumps(cast(u)) for u in series.unique()}
        part = series.map(encoded)
        text = "[" + part if text is None else text + "," + part
    if text is None:
        return []
    text = text + "," + json.dumps(str(config_hash)) + "]"
    sha = hashlib.sha256
    return [sha(t.encode("utf-8")).hexdigest() for t in text.tolist()]


@dataclass(frozen=True, kw_only=True)
class RunIdentity:
    """What one run is: the eleven identity columns of table ``runs``.

    ``condition`` is ``"clean"``, a perturbation name or ``"shift"``; ``severity`` is 0 for
    clean and shift, 1–3 for perturbations; ``recalibrator`` is ``"none"`` or a method name.
    """

    encoder: str
    dataset: str
    eval_dataset: str
    seed: int
    regime: str = FROZEN
    probe: str = "logistic"
    layer: float = 1.0
    fraction: float = 1.0
    condition: str = CLEAN
    severity: int = 0
    recalibrator: str = "none"

    def __post_init__(self) -> None:
        problems = identity_problems(self.as_dict())
        if problems:
            raise StoreError("invalid run identity: " + "; ".join(problems))

    def as_dict(self) -> dict[str, Any]:
        """The identity columns as a dict."""
        return {c: getattr(self, c) for c in IDENTITY_COLUMNS}

    def key(self, config_hash: str) -> str:
        """:func:`make_run_key` of this identity under ``config_hash``."""
        return make_run_key(self.as_dict(), config_hash)


def identity_problems(row: Mapping[str, Any]) -> list[str]:
    """Every way ``row``'s identity columns break the schema (empty when valid)."""
    out: list[str] = []
    for col in TEXT_IDENTITY_COLUMNS:
        v = row.get(col)
        if not isinstance(v, str) or not v:
            out.append(f"{col} must be a non-empty string. Got {v!r} instead")
    for col in INT_IDENTITY_COLUMNS:
        v = row.get(col)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            out.append(f"{col} must be an integer >= 0. Got {v!r} instead")
    for col in FLOAT_IDENTITY_COLUMNS:
        v = row.get(col)
        ok = isinstance(v, int | float) and not isinstance(v, bool) and 0.0 < v <= 1.0
        if not ok:
            out.append(f"{col} must be a number in (0, 1]. Got {v!r} instead")
    if row.get("regime") not in REGIMES:
        out.append(f"regime must be one of {REGIMES}. Got {row.get('regime')!r} instead")
    cond, sev = row.get("condition"), row.get("severity")
    if cond in UNPERTURBED_CONDITIONS and sev != 0:
        out.append(f"severity must be 0 for condition {cond!r}. Got {sev!r} instead")
    if cond not in UNPERTURBED_CONDITIONS and isinstance(sev, int) and sev < 1:
        out.append(f"severity must be >= 1 for perturbation {cond!r}. Got {sev!r} instead")
    return out


def _utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


@dataclass(frozen=True, kw_only=True)
class RunRecord(RunIdentity):
    """One row of table ``runs``: identity, metrics and provenance, validated on creation.

    Metrics are finite floats or ``None``. ``auroc``, ``ece``, ``brier`` and ``nll`` may be
    ``None`` only when ``details["undefined"][metric]`` gives the reason;
    ``sens_at_spec90`` / ``sens_at_spec95`` may be ``None`` freely (operating points are
    optional). Every provenance field must be filled. ``details`` is the typed
    :class:`~crsbench.store.details.RunDetails` (a mapping is taken as its JSON object); it
    must be JSON-serialisable and deterministic (it is compared on re-append): excluded labels,
    chosen C, convergence warnings.

    Raises
    ------
    StoreError
        If any field breaks the schema; the message lists every problem.
    """

    auroc: float | None = None
    ece: float | None = None
    brier: float | None = None
    nll: float | None = None
    sens_at_spec90: float | None = None
    sens_at_spec95: float | None = None
    config_hash: str
    package_version: str
    encoder_revision: str
    dataset_revision: str
    anchors_version: str
    wall_time_s: float
    created_at: datetime = field(default_factory=_utcnow)
    schema_version: int = SCHEMA_VERSION
    details: RunDetails | Mapping[str, Any] = field(default_factory=RunDetails)

    def __post_init__(self) -> None:
        row = {f.name: getattr(self, f.name) for f in fields(self)}
        row["details"] = self.details_object()
        problems = identity_problems(row) + record_problems(row)
        if problems:
            raise StoreError("invalid run record: " + "; ".join(problems))

    @property
    def run_key(self) -> str:
        """sha256 of the identity and ``config_hash`` (the table's primary key)."""
        return make_run_key(self.as_dict(), self.config_hash)

    def details_object(self) -> Mapping[str, Any]:
        """``details`` as the JSON object the store holds."""
        d = self.details
        return d.as_json() if isinstance(d, RunDetails) else d

    def identity(self) -> RunIdentity:
        """The identity part alone."""
        return RunIdentity(**self.as_dict())

    def to_row(self) -> dict[str, Any]:
        """The record as a ``runs`` row: all :data:`RUN_COLUMNS`, ``details`` as JSON text."""
        row = {c: getattr(self, c) for c in IDENTITY_COLUMNS + METRIC_COLUMNS}
        row.update(
            run_key=self.run_key,
            config_hash=self.config_hash,
            package_version=self.package_version,
            encoder_revision=self.encoder_revision,
            dataset_revision=self.dataset_revision,
            anchors_version=self.anchors_version,
            wall_time_s=float(self.wall_time_s),
            created_at=self.created_at,
            schema_version=self.schema_version,
            details=details_json(self.details_object()),
        )
        row["layer"], row["fraction"] = _num(self.layer), _num(self.fraction)
        return row


def details_json(details: Mapping[str, Any]) -> str:
    """Canonical JSON text of a details mapping (sorted keys, no NaN)."""
    try:
        return json.dumps(dict(details), sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"details must be JSON-serialisable without NaN/Inf: {exc}") from None


def record_problems(row: Mapping[str, Any]) -> list[str]:
    """Every way ``row``'s metric and provenance fields break the schema (empty when valid)."""
    out: list[str] = []
    details = row.get("details")
    if isinstance(details, str):
        try:
            details = json.loads(details)
        except ValueError:
            out.append(f"details must be JSON text. Got {details[:80]!r} instead")
            details = {}
    if not isinstance(details, Mapping):
        out.append(f"details must be a mapping. Got {type(details).__name__} instead")
        details = {}
    out += quarantine_problems(details)
    undefined = details.get("undefined") or {}
    for m in METRIC_COLUMNS:
        v = row.get(m)
        if v is None:
            if m in REQUIRED_METRICS and not (isinstance(undefined, Mapping) and undefined.get(m)):
                out.append(f"{m} is missing; a missing {m} needs details['undefined'][{m!r}]")
        elif isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            out.append(f"{m} must be a finite number or None. Got {v!r} instead")
    chash = row.get("config_hash")
    if not isinstance(chash, str) or not _HEX64.match(chash):
        out.append(f"config_hash must be 64 lowercase hex characters. Got {chash!r} instead")
    for col in ("package_version", "encoder_revision", "dataset_revision", "anchors_version"):
        v = row.get(col)
        if not isinstance(v, str) or not v.strip():
            out.append(f"{col} must be filled (provenance). Got {v!r} instead")
    wall = row.get("wall_time_s")
    if isinstance(wall, bool) or not isinstance(wall, int | float) or not wall >= 0:
        out.append(f"wall_time_s must be a number >= 0. Got {wall!r} instead")
    elif not math.isfinite(wall):
        out.append(f"wall_time_s must be finite. Got {wall!r} instead")
    if not isinstance(row.get("created_at"), datetime):
        out.append(f"created_at must be a datetime. Got {row.get('created_at')!r} instead")
    sv = row.get("schema_version")
    if sv != SCHEMA_VERSION:
        out.append(f"schema_version must be {SCHEMA_VERSION}. Got {sv!r} instead")
    return out


def quarantine_problems(details: Mapping[str, Any]) -> list[str]:
    """How ``details["n_quarantined"]`` breaks the schema, if present (empty when valid).

    It maps split names (:data:`QUARANTINE_KEYS`) to the number of images of that split the
    cell left out (integers >= 0).
    """
    counts = details.get("n_quarantined")
    if counts is None:
        return []
    if not isinstance(counts, Mapping):
        return [f"details['n_quarantined'] must be a mapping. Got {counts!r} instead"]
    out = []
    for key, n in counts.items():
        if key not in QUARANTINE_KEYS:
            out.append(
                f"details['n_quarantined'] keys must be among {QUARANTINE_KEYS}. Got {key!r}"
            )
        elif isinstance(n, bool) or not isinstance(n, int) or n < 0:
            out.append(f"details['n_quarantined'][{key!r}] must be an int >= 0. Got {n!r}")
    return out
