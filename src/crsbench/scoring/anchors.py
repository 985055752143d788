"""Versioned anchors: axis bounds, CRS weights and the fixed reference panel.

An anchors file (YAML) freezes everything the fixed-anchor CRS depends on, so that adding
encoders to a benchmark never changes a published score. The shipped files live in the
``crsbench/resources/anchors`` folder (``v1.yaml``, ...). A new version is frozen from a results
store with :func:`freeze_anchors`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import yaml

from crsbench.core.diskio import write_text_atomic
from crsbench.core.errors import ConfigError
from crsbench.protocol import ANCHORS_VERSION, AXES, UTILITY_COLUMNS  # noqa: F401  (re-exported)
from crsbench.resources import resource_file, resource_label
from crsbench.scoring.dominance import UNIFORM_EXACT, UniformReference

if TYPE_CHECKING:
    import pandas as pd

#: A reference panel: an ``(n, 4)`` array of profiles, or the exact uniform reference (v2).
Reference = np.ndarray | UniformReference

_WEIGHT_KEYS = ("P", "I", "W")
_HALTON_BASES = (2, 3, 5, 7)


@dataclass(frozen=True)
class AxisBound:
    """Anchors of one axis: the raw values that map to utility 0 (``worst``) and 1 (``best``)."""

    worst: float
    best: float

    def utility(self, values: np.ndarray) -> np.ndarray:
        """``(x - worst) / (best - worst)`` clipped to [0, 1]; NaN stays NaN."""
        u = (np.asarray(values, dtype=float) - self.worst) / (self.best - self.worst)
        return np.clip(u, 0.0, 1.0)


@dataclass(frozen=True)
class Anchors:
    """Everything a fixed-anchor CRS depends on.

    Attributes
    ----------
    version : str
        Recorded beside every score.
    bounds : dict[str, AxisBound]
        One entry per axis of :data:`AXES`.
    weights : dict[str, float]
        ``P``, ``I``, ``W`` weights of the CRS (sum to 1).
    panel : numpy.ndarray or UniformReference
        Default reference panel, shape ``(n, 4)``, utilities in [0, 1]; or the uniform
        distribution on ``[0, 1]^4`` itself, whose dominated share is computed exactly
        (``uniform-exact`` in the file; anchors v2).
    panel_by_dataset : dict[str, numpy.ndarray or UniformReference]
        Optional per-dataset panels (frozen from a store); a dataset not listed uses ``panel``.
    description : str
        Free text: where the panel came from.
    """

    version: str
    bounds: dict[str, AxisBound]
    weights: dict[str, float]
    panel: Reference
    panel_by_dataset: dict[str, Reference] = field(default_factory=dict)
    description: str = ""

    def panel_for(self, dataset: str | None) -> Reference:
        """The reference panel used for cells of ``dataset``."""
        if dataset is not None and dataset in self.panel_by_dataset:
            return self.panel_by_dataset[dataset]
        return self.panel

    def with_weights(self, weights: Mapping[str, float]) -> Anchors:
        """A copy with other CRS weights (validated)."""
        return Anchors(
            self.version,
            self.bounds,
            _check_weights(dict(weights), "weights"),
            self.panel,
            self.panel_by_dataset,
            self.description,
        )

    def to_dict(self) -> dict:
        """Plain YAML-ready form (the inverse of :func:`anchors_from_dict`)."""
        return {
            "version": self.version,
            "description": self.description,
            "bounds": {a: {"worst": b.worst, "best": b.best} for a, b in self.bounds.items()},
            "weights": dict(self.weights),
            "reference_panel": {
                "default": _panel_rows(self.panel),
                "by_dataset": {d: _panel_rows(p) for d, p in self.panel_by_dataset.items()},
            },
        }


def _panel_rows(panel: Reference) -> list[list[float]] | str:
    if isinstance(panel, UniformReference):
        return UNIFORM_EXACT
    return [[round(float(v), 6) for v in row] for row in panel]


def halton_panel(n: int = 256) -> np.ndarray:
    """The first ``n`` points (index 1..n) of the 4-D Halton sequence, bases 2, 3, 5, 7.

    This deterministic low-discrepancy set spreads evenly over the utility cube [0, 1]^4, so
    the share of it an encoder weakly dominates estimates the dominated hypervolume
    ``prod(u)``: a Pareto-compliant indicator that needs no cohort. It is the v1 panel.
    """
    if n < 1:
        raise ConfigError(f"n must be a positive integer. Got {n!r} instead.")
    out = np.zeros((n, len(_HALTON_BASES)))
    for j, base in enumerate(_HALTON_BASES):
        for i in range(1, n + 1):
            f, r, k = 1.0, 0.0, i
            while k > 0:
                f /= base
                r += f * (k % base)
                k //= base
            out[i - 1, j] = r
    return out


def _check_weights(weights: dict, where: str) -> dict[str, float]:
    if set(weights) != set(_WEIGHT_KEYS):
        raise ConfigError(
            f"{where}: keys must be {list(_WEIGHT_KEYS)}. Got {sorted(weights)} instead."
        )
    out = {}
    for k in _WEIGHT_KEYS:
        v = weights[k]
        if not isinstance(v, int | float) or isinstance(v, bool) or not 0 <= v <= 1:
            raise ConfigError(f"{where}.{k} must be a number in [0, 1]. Got {v!r} instead.")
        out[k] = float(v)
    if not math.isclose(sum(out.values()), 1.0, abs_tol=1e-9):
        raise ConfigError(f"{where} must sum to 1. Got {sum(out.values())!r} instead.")
    return out


def _check_panel(rows: object, where: str) -> Reference:
    if isinstance(rows, str):
        if rows != UNIFORM_EXACT:
            raise ConfigError(
                f"{where} must be '{UNIFORM_EXACT}' or a list of 4-number lists. Got {rows!r}."
            )
        return UniformReference(len(AXES))
    try:
        arr = np.asarray(rows, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where} must be a list of 4-number lists. Got {rows!r}.") from exc
    if arr.ndim != 2 or arr.shape[1] != len(AXES) or arr.shape[0] == 0:
        raise ConfigError(
            f"{where} must be a non-empty list of 4-number lists. Got shape {arr.shape} instead."
        )
    bad = np.argwhere(~np.isfinite(arr) | (arr < 0) | (arr > 1))
    if len(bad):
        r, c = bad[0]
        raise ConfigError(
            f"{where}: row {r + 1}, column {c + 1} must be in [0, 1]. Got {arr[r, c]!r} instead."
        )
    return arr


def anchors_from_dict(data: object, source: str = "<anchors>") -> Anchors:
    """Validate a parsed anchors document; errors name ``source`` and the key at fault."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source} must hold a mapping. Got {type(data).__name__} instead.")
    for key in ("version", "bounds", "weights", "reference_panel"):
        if key not in data:
            raise ConfigError(f"{source}: key '{key}' is missing.")
    unknown = set(data) - {"version", "description", "bounds", "weights", "reference_panel"}
    if unknown:
        raise ConfigError(f"{source}: unknown key(s) {sorted(unknown)}.")
    bounds = {}
    for axis in AXES:
        b = data["bounds"].get(axis) if isinstance(data["bounds"], dict) else None
        if not isinstance(b, dict) or set(b) != {"worst", "best"}:
            raise ConfigError(
                f"{source}: bounds.{axis} must be a mapping with 'worst' and 'best'. Got {b!r}."
            )
        if b["worst"] == b["best"]:
            raise ConfigError(f"{source}: bounds.{axis} worst and best must differ. Got {b!r}.")
        bounds[axis] = AxisBound(float(b["worst"]), float(b["best"]))
    weights = _check_weights(dict(data["weights"] or {}), f"{source}: weights")
    panel_doc = data["reference_panel"]
    if not isinstance(panel_doc, dict) or "default" not in panel_doc:
        raise ConfigError(f"{source}: reference_panel must be a mapping with key 'default'.")
    panel = _check_panel(panel_doc["default"], f"{source}: reference_panel.default")
    by_ds = {
        str(d): _check_panel(rows, f"{source}: reference_panel.by_dataset.{d}")
        for d, rows in (panel_doc.get("by_dataset") or {}).items()
    }
    return Anchors(
        version=str(data["version"]),
        bounds=bounds,
        weights=weights,
        panel=panel,
        panel_by_dataset=by_ds,
        description=str(data.get("description", "")),
    )


def load_anchors(source: str | Path | Anchors | None = None) -> Anchors:
    """Load anchors: ``None`` = the shipped current version, a version name (``"v1"``), or a path.

    Raises
    ------
    ConfigError
        The file is missing, not YAML, or invalid (the message names the file and key).
    """
    if isinstance(source, Anchors):
        return source
    if source is None:
        source = ANCHORS_VERSION
    path = Path(source)
    if not path.suffix and not path.exists():
        res = resource_file("anchors", f"{source}.yaml")
        if not res.is_file():
            raise ConfigError(f"anchors version '{source}' is not shipped with crsbench.")
        text, name = res.read_text(encoding="utf-8"), resource_label("anchors", f"{source}.yaml")
    else:
        if not path.is_file():
            raise ConfigError(f"anchors file {path} must exist. It does not.")
        text, name = path.read_text(encoding="utf-8"), str(path)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{name} must be valid YAML: {exc}") from exc
    return anchors_from_dict(data, name)


def save_anchors(anchors: Anchors, out_path: str | Path) -> Path:
    """Write ``anchors`` as YAML (flow-style panel rows) and return the path."""
    out = Path(out_path)
    doc = anchors.to_dict()
    panel = doc.pop("reference_panel")
    text = yaml.safe_dump(doc, sort_keys=False)
    lines = ["reference_panel:", *_panel_lines("default", panel["default"], "  ")]
    lines.append("  by_dataset:" + ("" if panel["by_dataset"] else " {}"))
    for ds, rows in panel["by_dataset"].items():
        lines += _panel_lines(ds, rows, "    ")
    return write_text_atomic(out, text + "\n".join(lines) + "\n")


def _panel_lines(name: str, rows: list | str, indent: str) -> list[str]:
    if isinstance(rows, str):
        return [f"{indent}{name}: {rows}"]
    return [f"{indent}{name}:", *(f"{indent}  - {row}" for row in rows)]


def freeze_anchors(
    store_dir: str | Path,
    out_path: str | Path,
    version: str,
    base: str | Path | Anchors | None = None,
    datasets: Sequence[str] | None = None,
) -> Anchors:
    """Freeze a new anchors version whose reference panel is a store's encoder profiles.

    The bounds and weights are copied from ``base`` (default: the current version); the
    per-dataset panels are the seed-mean utility profiles of every complete cell in the store
    (main protocol, held to the store's recorded plan: a cell missing a planned seed, condition
    or shift target has no profile), so that dominance means "share of this frozen cohort of
    peers". Once
    written, the file never changes: later encoders are scored against it unchanged.

    Parameters
    ----------
    store_dir : path
        Directory holding ``results.duckdb``.
    out_path : path
        YAML file to write.
    version : str
        Name of the new version (recorded with every score computed from it).
    base : anchors source, optional
        Where bounds and weights come from.
    datasets : sequence of str, optional
        Restrict the frozen panels to these datasets.
    """
    from crsbench.scoring.axes import seed_means
    from crsbench.scoring.planned import planned_axes
    from crsbench.store import load_runs

    base_anchors = load_anchors(base)
    cells = seed_means(planned_axes(load_runs(store_dir), store_dir))  # the store's plan
    if datasets is not None:
        cells = cells[cells["dataset"].isin(list(datasets))]
    if cells.empty:
        raise ConfigError(f"store {store_dir} has no main-protocol cells to freeze a panel from.")
    by_ds = {}
    for ds, grp in cells.groupby("dataset", sort=True):
        u = np.column_stack([base_anchors.bounds[a].utility(grp[a].to_numpy()) for a in AXES])
        by_ds[str(ds)] = u[np.isfinite(u).all(axis=1)]
    all_u = np.concatenate(list(by_ds.values()))
    frozen = Anchors(
        version=version,
        bounds=base_anchors.bounds,
        weights=base_anchors.weights,
        panel=all_u,
        panel_by_dataset=by_ds,
        description=(
            f"Frozen from store {Path(store_dir).name}: seed-mean utility profiles of "
            f"{cells['encoder'].nunique()} encoders over {len(by_ds)} datasets; bounds and "
            f"weights from anchors {base_anchors.version}."
        ),
    )
    save_anchors(frozen, out_path)
    return frozen


def anchors_for_runs(source: str | Path | Anchors | None, runs: pd.DataFrame) -> Anchors:
    """The anchors a store's runs are scored with.

    ``source`` when given (``--anchors``); otherwise the one version the runs recorded (column
    ``anchors_version``: the config's ``anchors``), so a store made with ``anchors: v1`` is
    scored with v1; otherwise (no record) the current version.

    Parameters
    ----------
    source : anchors source or None
        What the user asked for.
    runs : pandas.DataFrame
        A store's ``runs`` table.

    Raises
    ------
    ConfigError
        The runs recorded several versions, or one that cannot be loaded here.
    """
    if source is not None:
        return load_anchors(source)
    column = runs["anchors_version"] if "anchors_version" in getattr(runs, "columns", ()) else []
    recorded = sorted({str(v) for v in column if isinstance(v, str) and v})
    if len(recorded) > 1:
        raise ConfigError(
            f"the store's runs recorded several anchors versions {recorded}: "
            "name one with --anchors."
        )
    if not recorded:
        return load_anchors(None)
    try:
        return load_anchors(recorded[0])
    except ConfigError as exc:
        raise ConfigError(
            f"the store's runs recorded anchors '{recorded[0]}', which cannot be loaded here "
            f"({exc}): name a version or file with --anchors."
        ) from exc
