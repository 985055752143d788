"""Run records: the identity of one probe fit + evaluation, its metrics and its provenance.

A run is identified by eleven columns (:data:`IDENTITY_COLUMNS`) and the config hash; its
``run_key`` is the sha256 of both (:func:`make_run_key`), so a planner can compute the keys of
work still to do before running anything.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from typing import Any

from crsbench.core.errors import StoreError
from crsbench.protocol import CLEAN, FROZEN, UNPERTURBED_CONDITIONS
from crsbench.store.columns import (
    FLOAT_IDENTITY_COLUMNS,
    IDENTITY_COLUMNS,
    INT_IDENTITY_COLUMNS,
    METRIC_COLUMNS,
    REQUIRED_METRICS,
    RUNS_TABLE,
    SCHEMA_VERSION,
    Role,
)
from crsbench.store.details import RunDetails
from crsbench.store.rules import VALUE_CHECKS

_IDENTITY = tuple(c for c in RUNS_TABLE if c.role is Role.IDENTITY)
_RECORD = tuple(c for c in RUNS_TABLE if c.role is not Role.IDENTITY)


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
    """Every way ``row``'s identity columns break the schema (empty when valid): each column's
    declared rule (:mod:`crsbench.store.rules`), then severity against condition."""
    out: list[str] = []
    for col in _IDENTITY:
        out += VALUE_CHECKS[col.rule](col.name, row.get(col.name))
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

    ``metrics`` maps each of :data:`~crsbench.store.columns.METRIC_COLUMNS` to a finite float
    or ``None`` (a metric left out is ``None``): a required metric (``auroc``, ``ece``,
    ``brier``, ``nll``) may be ``None`` only when ``details["undefined"][metric]`` gives the
    reason; the operating points ``sens_at_spec90`` / ``sens_at_spec95`` may be ``None``
    freely. Every provenance field must be filled. Each column is checked by the rule
    :data:`~crsbench.store.columns.RUNS_TABLE` declares for it. ``details`` is the typed
    :class:`~crsbench.store.details.RunDetails` (a mapping is taken as its JSON object); it
    must be JSON-serialisable and deterministic (it is compared on re-append): excluded labels,
    chosen C, convergence warnings.

    Raises
    ------
    StoreError
        If any field breaks the schema; the message lists every problem.
    """

    metrics: Mapping[str, float | None] = field(default_factory=dict)
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
        given = dict(self.metrics)
        unknown = sorted(set(given) - set(METRIC_COLUMNS))
        object.__setattr__(self, "metrics", {m: given.get(m) for m in METRIC_COLUMNS})
        row = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "metrics"}
        row.update(self.metrics, details=self.details_object())
        problems = identity_problems(row) + record_problems(row)
        if unknown:
            problems.append(f"metrics must be among {list(METRIC_COLUMNS)}. Got {unknown}")
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
        row = {**self.as_dict(), **self.metrics}
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
    """Every way ``row``'s metric and provenance fields break the schema (empty when valid):
    each column's declared rule, then a missing required metric's reason."""
    out: list[str] = []
    for col in _RECORD:
        out += VALUE_CHECKS[col.rule](col.name, row.get(col.name))
    details = row.get("details")
    if isinstance(details, str):
        try:
            details = json.loads(details)
        except ValueError:
            details = {}
    undefined = details.get("undefined") if isinstance(details, Mapping) else None
    for m in REQUIRED_METRICS:
        if row.get(m) is None and not (isinstance(undefined, Mapping) and undefined.get(m)):
            out.append(f"{m} is missing; a missing {m} needs details['undefined'][{m!r}]")
    return out
