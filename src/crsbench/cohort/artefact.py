"""The calibrated model a cohort profile hands over: one small folder, safe to load.

``model.json`` (format, version, encoder reference, probe and recalibrator description,
provenance, the tensors file's sha256 and a checksum over the JSON itself) and
``model.safetensors`` (every array). Nothing is pickled: loading reads JSON and raw tensors
only. The checksum is an integrity check (a changed byte in either file is refused), not a
signature.

The probe's operational weights are ``probe.coef`` (d x K) and ``probe.intercept`` (K): logits
are ``features @ coef + intercept``, exactly as the profile computed them. Its standardisation
(``probe.mean``, ``probe.scale`` over the training rows) and the same model in standardised
form (``probe.weights``, ``probe.bias``: logits = ((features - mean) / scale) @ weights + bias)
are stored beside them for reading.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from crsbench.calibration import RecalibrationFit
from crsbench.core.errors import DataError
from crsbench.store.outputs import write_output_file

FORMAT = "crsbench-model"
FORMAT_VERSION = 1
MODEL_JSON = "model.json"
TENSORS_FILE = "model.safetensors"


@dataclass(frozen=True)
class ModelArtefact:
    """Encoder reference, linear probe and (optional) recalibration of one exported model.

    Attributes
    ----------
    encoder : dict
        ``name``, ``weights_sha256``, ``input_size``, ``working_size``, ``precision``,
        ``revision``.
    task : str
    labels : list of str
        Class names (multi-class) or label columns (multi-label), in output order.
    probe : dict
        ``C`` (chosen on validation macro-AUROC), ``seed``, ``n_train`` and the fit's flags.
    coef, intercept, mean, scale : numpy.ndarray
    recalibrator : RecalibrationFit or None
    provenance : dict
        Store, config hash, dataset revision, package version, the stored metrics reproduced.
    """

    encoder: dict[str, Any]
    task: str
    labels: list[str]
    probe: dict[str, Any]
    coef: np.ndarray
    intercept: np.ndarray
    mean: np.ndarray
    scale: np.ndarray
    recalibrator: RecalibrationFit | None = None
    provenance: dict[str, Any] = field(default_factory=dict)

    def probe_proba(self, features: np.ndarray) -> np.ndarray:
        """Uncalibrated probabilities of the probe (the profile's recalibrator ``none``)."""
        from crsbench.probes.grid import linear_proba

        return linear_proba(features, self.coef, self.intercept, self.task)

    def predict_proba(self, features: np.ndarray) -> np.ndarray:
        """Calibrated N x K probabilities: probe, then the recalibration (if any)."""
        p = self.probe_proba(features)
        return p if self.recalibrator is None else self.recalibrator.predict_proba(p)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _canonical(doc: dict[str, Any]) -> bytes:
    body = {k: v for k, v in doc.items() if k != "checksum"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def _tensors(model: ModelArtefact) -> dict[str, np.ndarray]:
    weights = model.coef * model.scale[:, None]
    bias = model.intercept + model.mean @ model.coef
    arrays = {"probe.coef": model.coef, "probe.intercept": model.intercept,
              "probe.mean": model.mean, "probe.scale": model.scale,
              "probe.weights": weights, "probe.bias": bias}  # fmt: skip
    return {k: np.ascontiguousarray(v, dtype=np.float64) for k, v in arrays.items()}


def save_model(model: ModelArtefact, out_dir: Path) -> Path:
    """Write ``model.safetensors`` and ``model.json`` under ``out_dir`` (each atomically,
    through :func:`crsbench.store.outputs.write_output_file`); return the JSON path."""
    from safetensors.numpy import save

    from crsbench.cohort.recal_params import recal_to_parts

    arrays = _tensors(model)
    recal = None
    if model.recalibrator is not None:
        recal, extra = recal_to_parts(model.recalibrator)
        arrays.update(extra)
    blob = save(arrays)
    doc = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "encoder": model.encoder,
        "task": model.task,
        "labels": list(model.labels),
        "probe": {
            **model.probe,
            "logits": "features @ coef + intercept",
            "n_features": int(model.coef.shape[0]),
        },  # fmt: skip
        "recalibrator": recal,
        "provenance": model.provenance,
        "files": {TENSORS_FILE: _sha256(blob)},
    }
    doc["checksum"] = _sha256(_canonical(doc))
    text = json.dumps(doc, indent=2)
    write_output_file(Path(out_dir) / TENSORS_FILE, lambda tmp: tmp.write_bytes(blob))
    return write_output_file(
        Path(out_dir) / MODEL_JSON, lambda tmp: tmp.write_text(text, encoding="utf-8")
    )


def _read_doc(model_dir: Path) -> tuple[dict[str, Any], bytes]:
    path = model_dir / MODEL_JSON
    if not path.is_file() or not (model_dir / TENSORS_FILE).is_file():
        raise DataError(
            f"{model_dir} must hold {MODEL_JSON} and {TENSORS_FILE} (written by "
            "`crsbench export`). One or both are missing."
        )
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{path}: not valid JSON ({exc}); the file was changed.") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise DataError(f"{path}: not a crsbench model (format {FORMAT!r} expected).")
    if doc.get("format_version") != FORMAT_VERSION:
        raise DataError(
            f"{path}: format_version must be {FORMAT_VERSION}. Got "
            f"{doc.get('format_version')!r} instead (written by another crsbench version)."
        )
    return doc, (model_dir / TENSORS_FILE).read_bytes()


def verify_checksums(doc: dict[str, Any], blob: bytes, model_dir: Path) -> None:
    """Refuse a model whose JSON or tensors changed since export."""
    if doc.get("checksum") != _sha256(_canonical(doc)):
        raise DataError(
            f"{model_dir / MODEL_JSON}: checksum mismatch: the file was changed after "
            "`crsbench export` wrote it. Export the model again; do not edit it."
        )
    want = doc.get("files", {}).get(TENSORS_FILE)
    if want != _sha256(blob):
        raise DataError(
            f"{model_dir / TENSORS_FILE}: sha256 {_sha256(blob)} does not match {want!r} "
            f"recorded in {MODEL_JSON}: the tensors were changed or replaced. Export again."
        )


def check_shapes(doc: dict[str, Any], arrays: dict[str, np.ndarray], path: Path) -> None:
    """Refuse tensors whose shapes disagree with the JSON (``n_features``, ``labels``)."""
    coef = arrays.get("probe.coef")
    if coef is None or coef.ndim != 2:
        raise DataError(f"{path}: the tensors hold no 2-D probe.coef; export the model again.")
    width = doc.get("probe", {}).get("n_features")
    if width != coef.shape[0]:
        raise DataError(
            f"{path}: probe.n_features is {width!r}, but probe.coef has {coef.shape[0]} rows "
            "(one per feature): the JSON and the tensors are of different models. Export again."
        )
    for name in ("probe.mean", "probe.scale"):
        got = arrays.get(name)
        if got is None or got.shape != (coef.shape[0],):
            shape = None if got is None else got.shape
            raise DataError(f"{path}: {name} has shape {shape}; n_features is {width}. "
                            "Export the model again.")  # fmt: skip


def load_model(model_dir: Path) -> ModelArtefact:
    """Read and verify an exported model (checksums first; no pickle is ever loaded)."""
    from safetensors.numpy import load

    from crsbench.cohort.recal_params import recal_from_parts

    model_dir = Path(model_dir)
    doc, blob = _read_doc(model_dir)
    verify_checksums(doc, blob, model_dir)
    arrays = load(blob)
    check_shapes(doc, arrays, model_dir / MODEL_JSON)
    recal = doc.get("recalibrator")
    probe = {k: v for k, v in doc["probe"].items() if k not in ("logits", "n_features")}
    return ModelArtefact(
        encoder=doc["encoder"], task=doc["task"], labels=list(doc["labels"]), probe=probe,
        coef=arrays["probe.coef"], intercept=arrays["probe.intercept"],
        mean=arrays["probe.mean"], scale=arrays["probe.scale"],
        recalibrator=None if recal is None else recal_from_parts(recal, arrays),
        provenance=doc.get("provenance", {}),
    )  # fmt: skip
