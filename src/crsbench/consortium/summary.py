"""A site summary: what one hospital sends to the consortium, and nothing more.

Plain, indented JSON (format ``crsbench-site-summary``, version 1), readable before it is
sent. Per encoder: the four axes and the CRS, each with its bootstrap variance (test patients
× seeds), and the weights' sha256 from the weights lock. For the site: its name, task, label
set, test-split sizes (images, patients, images per label or class), the anchors and protocol
versions, crsbench's version and the consortium settings used. A count below the settings'
``min_cell_size`` is written as ``null`` and named under ``suppressed``.

Only the fields of these records are ever written: no image or patient id, no path, no
per-sample prediction and no free text of the cohort.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crsbench.core.errors import DataError
from crsbench.store.outputs import write_output_file

FORMAT = "crsbench-site-summary"
FORMAT_VERSION = 1
#: The pooled quantities: the four axes (D, C, L, R) and the CRS.
QUANTITIES: tuple[str, ...] = ("auroc", "ece", "retention", "robustness_drop", "CRS")
#: Whether a higher value is better, per quantity.
HIGHER_IS_BETTER: dict[str, bool] = {
    "auroc": True, "ece": False, "retention": True, "robustness_drop": False, "CRS": True,
}  # fmt: skip


@dataclass(frozen=True)
class Estimate:
    """A site's value of one quantity and its bootstrap variance."""

    value: float
    variance: float


@dataclass(frozen=True)
class EncoderSummary:
    """One encoder at one site.

    Attributes
    ----------
    encoder : str
    weights : dict or None
        Weight file name → sha256 from the weights lock; None for a build without weight
        files (the offline ``pixel`` / ``random_cnn`` encoders).
    estimates : dict
        Quantity (:data:`QUANTITIES`) → :class:`Estimate`.
    """

    encoder: str
    weights: dict[str, str] | None
    estimates: dict[str, Estimate]


@dataclass(frozen=True)
class TestSizes:
    """Test-split counts; ``None`` where suppressed (below the small-cell threshold)."""

    images: int | None
    patients: int | None
    per_label: dict[str, int | None]


@dataclass(frozen=True)
class SiteSummary:
    """Everything a site sends (see the module)."""

    site: str
    task: str
    labels: tuple[str, ...]
    anchors_version: str
    protocol: dict[str, str]
    crsbench_version: str
    interval: str
    n_replicates: int
    sizes: TestSizes
    suppressed: tuple[str, ...]
    settings: dict[str, Any]
    encoders: tuple[EncoderSummary, ...] = field(default_factory=tuple)

    def encoder(self, name: str) -> EncoderSummary | None:
        """The summary of encoder ``name`` (None when the site did not profile it)."""
        return next((e for e in self.encoders if e.encoder == name), None)


def summary_to_dict(s: SiteSummary) -> dict[str, Any]:
    """The JSON document of ``s`` (only the records' fields)."""
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "site": s.site,
        "task": s.task,
        "labels": list(s.labels),
        "anchors_version": s.anchors_version,
        "protocol": dict(s.protocol),
        "crsbench_version": s.crsbench_version,
        "interval": s.interval,
        "n_replicates": s.n_replicates,
        "test_sizes": {
            "images": s.sizes.images,
            "patients": s.sizes.patients,
            "per_label": dict(s.sizes.per_label),
        },  # fmt: skip
        "suppressed": list(s.suppressed),
        "settings": dict(s.settings),
        "encoders": [
            {
                "encoder": e.encoder,
                "weights": e.weights,
                **{
                    q: {"value": est.value, "variance": est.variance}
                    for q, est in e.estimates.items()
                },
            }
            for e in s.encoders
        ],  # fmt: skip
    }


def write_summary(s: SiteSummary, path: Path | str) -> Path:
    """Write ``s`` as indented JSON, atomically where crsbench may write; return the path."""
    text = json.dumps(summary_to_dict(s), indent=2, allow_nan=False) + "\n"
    return write_output_file(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


class _Doc:
    """Typed access to a summary's JSON with errors naming the file and the key."""

    def __init__(self, path: Path, doc: Any) -> None:
        self.path = path
        if not isinstance(doc, dict):
            raise DataError(f"{path}: not a crsbench site summary (a JSON object expected).")
        self.doc = doc

    def get(self, obj: dict, key: str, kind: type | tuple[type, ...], where: str = "") -> Any:
        value = obj.get(key)
        ok = isinstance(value, kind) and not (isinstance(value, bool) and kind in (int, float))
        if not ok:
            raise DataError(f"{self.path}: {where}{key} must be {_kind(kind)}. "
                            f"Got {value!r} instead.")  # fmt: skip
        return value


def _kind(kind: type | tuple[type, ...]) -> str:
    names = [k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,))]
    return " or ".join("null" if n == "NoneType" else n for n in names)


def _estimates(d: _Doc, raw: dict, where: str) -> dict[str, Estimate]:
    out = {}
    for q in QUANTITIES:
        est = d.get(raw, q, dict, where)
        value = float(d.get(est, "value", (int, float), f"{where}{q}."))
        variance = float(d.get(est, "variance", (int, float), f"{where}{q}."))
        if variance < 0:
            raise DataError(f"{d.path}: {where}{q}.variance must be >= 0. Got {variance}.")
        out[q] = Estimate(value, variance)
    return out


def _encoder(d: _Doc, raw: Any, i: int) -> EncoderSummary:
    if not isinstance(raw, dict):
        raise DataError(f"{d.path}: encoders[{i}] must be an object. Got {raw!r} instead.")
    name = d.get(raw, "encoder", str, f"encoders[{i}].")
    weights = d.get(raw, "weights", (dict, type(None)), f"encoders[{i}].")
    files = None if weights is None else {str(k): str(v) for k, v in weights.items()}
    return EncoderSummary(name, files, _estimates(d, raw, f"encoders[{i}] ({name})."))


def _sizes(d: _Doc) -> TestSizes:
    raw = d.get(d.doc, "test_sizes", dict)
    count = (int, type(None))
    per_label = d.get(raw, "per_label", dict, "test_sizes.")
    return TestSizes(d.get(raw, "images", count, "test_sizes."),
                     d.get(raw, "patients", count, "test_sizes."),
                     {str(k): v for k, v in per_label.items()})  # fmt: skip


def read_summary(path: Path | str) -> SiteSummary:
    """Read and check a site summary file (:func:`summary_from_dict` of its JSON).

    Raises
    ------
    DataError
        Not JSON, another format or version, or a missing / mistyped key (file and key named).
    """
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DataError(f"{path}: cannot be read ({exc.strerror or exc}).") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{path}: not valid JSON ({exc}).") from None
    return summary_from_dict(doc, path)


def summary_from_dict(doc: Any, source: Path | str = "<summary>") -> SiteSummary:
    """Check a summary's JSON document and return its record (errors name ``source``)."""
    path = Path(source)
    d = _Doc(path, doc)
    if doc.get("format") != FORMAT:
        raise DataError(f"{path}: not a crsbench site summary (format {FORMAT!r} expected; "
                        "write one with `crsbench export-summary`).")  # fmt: skip
    if doc.get("format_version") != FORMAT_VERSION:
        raise DataError(f"{path}: format_version must be {FORMAT_VERSION}. Got "
                        f"{doc.get('format_version')!r} instead.")  # fmt: skip
    encoders = d.get(doc, "encoders", list)
    return SiteSummary(
        site=d.get(doc, "site", str), task=d.get(doc, "task", str),
        labels=tuple(str(x) for x in d.get(doc, "labels", list)),
        anchors_version=d.get(doc, "anchors_version", str),
        protocol={str(k): str(v) for k, v in d.get(doc, "protocol", dict).items()},
        crsbench_version=d.get(doc, "crsbench_version", str),
        interval=d.get(doc, "interval", str), n_replicates=d.get(doc, "n_replicates", int),
        sizes=_sizes(d), suppressed=tuple(str(x) for x in d.get(doc, "suppressed", list)),
        settings=d.get(doc, "settings", dict),
        encoders=tuple(_encoder(d, e, i) for i, e in enumerate(encoders)),
    )  # fmt: skip
