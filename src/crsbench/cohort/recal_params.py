"""A fitted recalibration as plain arrays and JSON, and back, without pickle.

Each choice of a :class:`~crsbench.calibration.RecalibrationFit` (one for a multi-class task,
one per label for a multi-label task) becomes ``{"choice", "params", ...}`` in JSON and its
fitted parameters become named arrays: ``temperature``; ``scale`` and ``bias`` (vector);
``weights`` and ``intercepts`` (Dirichlet); per column ``iso{k}.x`` / ``iso{k}.y`` knots with
the bounds in JSON (isotonic). Rebuilt maps predict exactly what the fitted ones did.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from crsbench.calibration import CALIBRATORS, RecalibrationFit, load_recal_protocol
from crsbench.calibration.selection import _Choice
from crsbench.core.errors import DataError

_ARRAYS: dict[str, tuple[str, ...]] = {
    "temperature": ("temperature_",),
    "vector": ("scale_", "bias_"),
    "dirichlet": ("weights_", "intercepts_"),
    "isotonic": (),
}


def _isotonic_parts(model: Any, prefix: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    meta: list[dict[str, Any] | None] = []
    arrays: dict[str, np.ndarray] = {}
    for k, iso in enumerate(model.maps_):
        if iso is None:
            meta.append(None)
            continue
        meta.append({"y_min": float(iso.y_min), "y_max": float(iso.y_max),
                     "x_min": float(iso.X_min_), "x_max": float(iso.X_max_)})  # fmt: skip
        arrays[f"{prefix}iso{k}.x"] = np.asarray(iso.X_thresholds_, dtype=np.float64)
        arrays[f"{prefix}iso{k}.y"] = np.asarray(iso.y_thresholds_, dtype=np.float64)
    return {"maps": meta}, arrays


def recal_to_parts(fit: RecalibrationFit) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """JSON description and named arrays (keys ``recal.{j}.{name}``) of a fitted recalibration."""
    choices: list[dict[str, Any]] = []
    arrays: dict[str, np.ndarray] = {}
    for j, c in enumerate(fit.choices):
        entry: dict[str, Any] = {**c.record(), "n_outputs": _width(fit, c)}
        prefix = f"recal.{j}."
        if c.model is not None and fit.method == "isotonic":
            meta, iso = _isotonic_parts(c.model, prefix)
            entry.update(meta)
            arrays.update(iso)
        elif c.model is not None:
            for attr in _ARRAYS[fit.method]:
                arrays[prefix + attr.rstrip("_")] = np.atleast_1d(
                    np.asarray(getattr(c.model, attr), dtype=np.float64)
                )
        choices.append(entry)
    info = {"method": fit.method, "task": fit.task, "input": fit.input,
            "n_outputs": fit.n_outputs, "seed": fit.seed, "protocol": fit.protocol.version,
            "choice": fit.choice, "choices": choices}  # fmt: skip
    return info, arrays


def _width(fit: RecalibrationFit, c: _Choice) -> int:
    return fit.n_outputs if fit.task == "multiclass" else 1


def _rebuild_isotonic(model: Any, entry: Mapping[str, Any], arrays: Mapping[str, np.ndarray],
                      prefix: str) -> None:  # fmt: skip
    from sklearn.isotonic import IsotonicRegression

    maps = []
    for k, meta in enumerate(entry["maps"]):
        if meta is None:
            maps.append(None)
            continue
        iso = IsotonicRegression(y_min=meta["y_min"], y_max=meta["y_max"], out_of_bounds="clip",
                                 increasing=True)  # fmt: skip
        iso.X_min_, iso.X_max_ = meta["x_min"], meta["x_max"]
        iso.X_thresholds_ = np.asarray(arrays[f"{prefix}iso{k}.x"])
        iso.y_thresholds_ = np.asarray(arrays[f"{prefix}iso{k}.y"])
        iso.increasing_ = True
        iso._build_f(iso.X_thresholds_, iso.y_thresholds_)
        maps.append(iso)
    model.maps_ = maps


def _rebuild_choice(method: str, task: str, entry: Mapping[str, Any],
                    arrays: Mapping[str, np.ndarray], j: int) -> _Choice:  # fmt: skip
    params = dict(entry["params"])
    model = None
    if entry["choice"] == "fitted":
        model = CALIBRATORS.get(method)(task=task, input="logits", **params)
        prefix = f"recal.{j}."
        if method == "isotonic":
            _rebuild_isotonic(model, entry, arrays, prefix)
        for attr in _ARRAYS[method]:
            value = np.asarray(arrays[prefix + attr.rstrip("_")], dtype=np.float64)
            scalar = method == "temperature" and task == "multiclass"
            setattr(model, attr, float(value[0]) if scalar else value)
        model.n_outputs_ = int(entry["n_outputs"])
    return _Choice(model, params, float(entry["cv_nll_identity"]), float(entry["cv_nll_fitted"]))


def recal_from_parts(info: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> RecalibrationFit:
    """The :class:`RecalibrationFit` described by :func:`recal_to_parts`' output."""
    protocol = load_recal_protocol()
    if protocol.version != info["protocol"]:
        raise DataError(
            f"the artefact's recalibrator was fitted under recalibration protocol "
            f"{info['protocol']!r}; this crsbench has {protocol.version!r}. Export it again "
            "with this version."
        )
    choices = tuple(
        _rebuild_choice(info["method"], info["task"], entry, arrays, j)
        for j, entry in enumerate(info["choices"])
    )
    return RecalibrationFit(info["method"], info["task"], info["input"], int(info["n_outputs"]),
                            choices, protocol, int(info["seed"]))  # fmt: skip
