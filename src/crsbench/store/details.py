"""The typed ``details`` of a run record: one frozen section per producer, one JSON object stored.

Column ``details`` of table ``runs`` holds one JSON object per run. It is assembled from
sections, each written by one step of the evaluation:

============================  ==================================================================
section (:class:`RunDetails`)  JSON keys
============================  ==================================================================
``score`` (ScoreDetails)      ``n_eval``, ``excluded``, ``n_pos``, ``suspicious_auroc_0.5``,
                              ``warnings``
``fit`` (one of four)         logistic: ``C``, ``val_auroc``, ``n_train``, ``n_iter``,
                              ``converged``, ``flags``, ``skipped``; layer tap: ``C``,
                              ``n_iter``, ``val_auroc``; control probe: ``n_train``; LoRA:
                              ``lr``, ``best_epoch``, ``val_auroc``, ``n_train``,
                              ``val_auroc_by_lr``, ``epochs_run``
``lora`` (LoraAdapters)       ``lora``
``shift`` (ShiftDetails)      ``shift_rows``, ``eval_dataset_revision``, ``shift_labels``
``recal`` (RecalDetails)      ``n_calib``, ``recal``, ``recal_choice``
``reliability``               ``reliability``
``undefined``                 ``undefined`` (metric → why it is NULL)
``n_quarantined``             ``n_quarantined`` (split → images left out)
``precision``                 ``precision`` (the cell's precision decision)
============================  ==================================================================

No two sections share a key, so the stored object is their union: :meth:`RunDetails.as_json`
writes it (the same object, key for key, as the rows of earlier versions wrote), and
:meth:`RunDetails.from_json` reads one back, refusing a key no section declares.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar

from crsbench.core.errors import StoreError

#: A JSON object as stored (values: str, int, float, bool, None, lists and objects).
JsonObject = Mapping[str, Any]


class _Section:
    """A flat group of ``details`` keys: one field per key (``_ALIASES`` renames a field's key;
    a field in ``_OPTIONAL`` is left out when None or an empty tuple). Lists are held as
    tuples."""

    _ALIASES: ClassVar[Mapping[str, str]] = {}
    _OPTIONAL: ClassVar[frozenset[str]] = frozenset()

    def as_json(self) -> dict[str, Any]:
        """The section's keys and values as stored."""
        out: dict[str, Any] = {}
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if f.name in self._OPTIONAL and (value is None or value == ()):
                continue
            out[self._ALIASES.get(f.name, f.name)] = (
                list(value) if isinstance(value, tuple) else value
            )
        return out

    @classmethod
    def keys(cls) -> frozenset[str]:
        """Every JSON key of the section."""
        return frozenset(cls._ALIASES.get(f.name, f.name) for f in fields(cls))  # type: ignore[arg-type]

    @classmethod
    def required_keys(cls) -> frozenset[str]:
        """The JSON keys always present."""
        names = [f.name for f in fields(cls) if f.name not in cls._OPTIONAL]  # type: ignore[arg-type]
        return frozenset(cls._ALIASES.get(n, n) for n in names)

    @classmethod
    def from_json(cls, obj: JsonObject) -> Any:
        """The section from the stored keys it declares (others ignored).

        Raises
        ------
        StoreError
            A key the section always writes is missing.
        """
        missing = sorted(cls.required_keys() - set(obj))
        if missing:
            raise StoreError(f"details section {cls.__name__} lacks the keys {missing}")
        values = {}
        for f in fields(cls):  # type: ignore[arg-type]
            key = cls._ALIASES.get(f.name, f.name)
            if key in obj:
                v = obj[key]
                values[f.name] = tuple(v) if isinstance(v, list) else v
        return cls(**values)


@dataclass(frozen=True)
class ScoreDetails(_Section):
    """What scoring one prediction records: rows scored, labels left out of the macro-AUROC
    (label → reason), positives per label, suspicious labels and the warnings raised."""

    n_eval: int
    excluded: JsonObject
    n_pos: tuple[int, ...]
    suspicious: tuple[Any, ...] = ()
    warnings: tuple[str, ...] = ()
    _ALIASES: ClassVar[Mapping[str, str]] = {"suspicious": "suspicious_auroc_0.5"}
    _OPTIONAL: ClassVar[frozenset[str]] = frozenset({"suspicious", "warnings"})


@dataclass(frozen=True)
class LogisticFit(_Section):
    """The main (logistic) probe's fit: chosen C, its validation AUROC (None when undefined),
    training rows, iterations, convergence, flags and the classes it could not fit."""

    C: float
    val_auroc: float | None
    n_train: int
    n_iter: int
    converged: bool
    flags: tuple[str, ...]
    skipped: JsonObject


@dataclass(frozen=True)
class LayerFit(_Section):
    """A logistic probe on an intermediate layer: chosen C, iterations, validation AUROC."""

    C: float
    n_iter: int
    val_auroc: float | None


@dataclass(frozen=True)
class ControlFit(_Section):
    """A control probe (kNN, MLP): its training rows."""

    n_train: int


@dataclass(frozen=True)
class LoraFit(_Section):
    """One LoRA fine-tune: chosen learning rate, best epoch, its validation AUROC, training
    rows, validation AUROC and epochs run per learning rate."""

    lr: float
    best_epoch: int
    val_auroc: float
    n_train: int
    val_auroc_by_lr: JsonObject
    epochs_run: JsonObject


#: What a row records of the model it scores (one of four kinds of fit).
ProbeFit = LogisticFit | LayerFit | ControlFit | LoraFit
_FITS: tuple[type[_Section], ...] = (LogisticFit, LayerFit, ControlFit, LoraFit)


@dataclass(frozen=True)
class LoraAdapters(_Section):
    """The LoRA regime's adapters (key ``lora``): rank, alpha, dropout, epochs, the adapted
    modules and where that list came from."""

    rank: int
    alpha: float
    dropout: float
    epochs: int
    targets: tuple[str, ...]
    targets_source: str

    def as_json(self) -> dict[str, Any]:
        """``{"lora": {...}}``."""
        return {"lora": super().as_json()}


@dataclass(frozen=True)
class ShiftDetails(_Section):
    """A shift-target row: which rows were scored (``shift_rows``), the target's revision and,
    when the compared labels leave out a source label, ``shift_labels``
    (:mod:`crsbench.core.shift_labels`)."""

    shift_rows: JsonObject | None = None
    eval_dataset_revision: str | None = None
    shift_labels: JsonObject | None = None
    _OPTIONAL: ClassVar[frozenset[str]] = frozenset(
        {"shift_rows", "eval_dataset_revision", "shift_labels"}
    )


@dataclass(frozen=True)
class RecalDetails(_Section):
    """A recalibrated row: calibration rows, the recalibrator's record and its choice
    (``"fitted"``, ``"identity"`` or ``"undefined"``)."""

    n_calib: int
    recal: JsonObject
    recal_choice: str


@dataclass(frozen=True)
class ReliabilityBins(_Section):
    """The reliability diagram's non-empty bins (key ``reliability``): index, mean
    confidence, accuracy and count, aligned."""

    bin: tuple[int, ...]
    conf: tuple[float, ...]
    acc: tuple[float, ...]
    count: tuple[int, ...]

    def as_json(self) -> dict[str, Any]:
        """``{"reliability": {...}}``."""
        return {"reliability": super().as_json()}


_NESTED: dict[str, type[_Section]] = {"lora": LoraAdapters, "reliability": ReliabilityBins}
_FLAT: tuple[type[_Section], ...] = (ScoreDetails, ShiftDetails, RecalDetails, *_FITS)
_MAPPINGS = ("undefined", "n_quarantined", "precision")


@dataclass(frozen=True)
class RunDetails:
    """The ``details`` of one run record, by section (``None`` or empty: absent).

    Attributes
    ----------
    score, fit, lora, shift, recal, reliability
        The typed sections (see the module).
    undefined : mapping metric → reason
        Why a metric is NULL.
    n_quarantined : mapping split → int
        Undecodable images the cell left out, per split (``shift``: the target's rows).
    precision : mapping
        The cell's precision decision.
    """

    score: ScoreDetails | None = None
    fit: ProbeFit | None = None
    lora: LoraAdapters | None = None
    shift: ShiftDetails | None = None
    recal: RecalDetails | None = None
    reliability: ReliabilityBins | None = None
    undefined: Mapping[str, str] = field(default_factory=dict)
    n_quarantined: Mapping[str, int] = field(default_factory=dict)
    precision: JsonObject = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The stored JSON object: the union of the sections' keys."""
        out: dict[str, Any] = {}
        for part in (self.score, self.fit, self.lora, self.shift, self.recal, self.reliability):
            if part is not None:
                out.update(part.as_json())
        for name in _MAPPINGS:
            value = getattr(self, name)
            if value:
                out[name] = dict(value)
        return out

    def merged(self, other: RunDetails) -> RunDetails:
        """These details with every section ``other`` sets (``other`` wins a section both set;
        two shift sections merge key by key)."""
        changes: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(other, f.name)
            if value is None or (f.name in _MAPPINGS and not value):
                continue
            mine = getattr(self, f.name)
            if f.name == "shift" and mine is not None:
                value = ShiftDetails.from_json({**mine.as_json(), **value.as_json()})
            changes[f.name] = value
        return replace(self, **changes) if changes else self

    @classmethod
    def from_json(cls, obj: JsonObject) -> RunDetails:
        """The typed details of a stored JSON object.

        Raises
        ------
        StoreError
            A key no section declares, or fit keys that match no kind of fit.
        """
        known = set(_MAPPINGS) | set(_NESTED)
        for section in _FLAT:
            known |= section.keys()
        unknown = sorted(set(obj) - known)
        if unknown:
            raise StoreError(f"details has keys no section declares: {unknown}")
        parts: dict[str, Any] = {name: dict(obj[name]) for name in _MAPPINGS if name in obj}
        for name, section in _NESTED.items():
            if name in obj:
                parts[name] = section.from_json(obj[name])
        named: tuple[tuple[str, type[_Section]], ...] = (
            ("score", ScoreDetails),
            ("recal", RecalDetails),
        )
        for name, section in named:
            if section.required_keys() & set(obj):
                parts[name] = section.from_json(obj)
        if ShiftDetails.keys() & set(obj):
            parts["shift"] = ShiftDetails.from_json(obj)
        parts["fit"] = _fit_from_json(obj)
        return cls(**parts)


def _fit_from_json(obj: JsonObject) -> ProbeFit | None:
    """The kind of fit whose keys are exactly the fit keys present (None when there are none)."""
    present = set(obj) & set().union(*(f.keys() for f in _FITS))
    if not present:
        return None
    for kind in _FITS:
        if kind.keys() == present:
            return kind.from_json(obj)  # type: ignore[no-any-return]
    raise StoreError(f"details fit keys {sorted(present)} match no kind of probe fit")
