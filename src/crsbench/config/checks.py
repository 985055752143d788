"""Checks that need the filesystem or the registries (kept apart from parsing)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path

from crsbench.config.loading import _anchors_is_path
from crsbench.config.models import (
    BenchmarkConfig,
)
from crsbench.core.errors import ConfigError

# ----------------------------------------------------------------------------- checks


def validate_paths(cfg: BenchmarkConfig) -> None:
    """Check that dataset roots, weight files and an anchors file exist (all problems at once)."""
    problems = [
        f"datasets.{n}.root: dataset {n!r} root {d.root} must be an existing directory."
        for n, d in cfg.datasets.items()
        if not d.root.is_dir()
    ]
    problems += [
        f"encoders.{i}.weights_path: weights file {e.weights_path} of encoder {e.name!r} "
        "does not exist."
        for i, e in enumerate(cfg.encoders)
        if e.weights_path is not None and not e.weights_path.is_file()
    ]
    if _anchors_is_path(cfg.anchors) and not Path(cfg.anchors).is_file():
        problems.append(f"anchors: anchors file {cfg.anchors} does not exist.")
    if problems:
        raise ConfigError("config paths are missing:\n  " + "\n  ".join(problems))


def _registry_names(module: str, attr: str) -> list[str] | None:
    """Names of ``module.attr``; None when that module is not installed (other errors raise)."""
    import importlib

    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            return None
        raise
    reg = getattr(mod, attr, None)
    if reg is None:
        return None
    return list(reg.names()) if hasattr(reg, "names") else list(reg)


def _unknown(names: Iterable[tuple[str, str]], known: list[str], kind: str) -> list[str]:
    out = []
    for key, name in names:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
            hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
            out.append(f"{key}: unknown {kind} {name!r}.{hint} Known: {', '.join(sorted(known))}.")
    return out


def validate_names(
    cfg: BenchmarkConfig,
    *,
    encoders: Iterable[str] | None = None,
    datasets: Iterable[str] | None = None,
    perturbations: Iterable[str] | None = None,
) -> None:
    """Check names against the registries (imported lazily; torch may load).

    ``encoders`` defaults to :data:`crsbench.encoders.ENCODERS`; ``datasets`` and
    ``perturbations`` default to the dataset and perturbation registries when those are
    importable, and are skipped otherwise. Pass name lists to check without importing.
    """
    enc = (
        list(encoders) if encoders is not None else _registry_names("crsbench.encoders", "ENCODERS")
    )
    if enc is None:
        raise ConfigError("cannot check encoder names: crsbench.encoders.ENCODERS is unavailable.")
    ds = (
        list(datasets) if datasets is not None else _registry_names("crsbench.datasets", "DATASETS")
    )
    pt = (
        list(perturbations)
        if perturbations is not None
        else _registry_names("crsbench.perturb", "PERTURBATIONS")
    )
    problems = _unknown(
        ((f"encoders.{i}.name", e.name) for i, e in enumerate(cfg.encoders)), enc, "encoder"
    )
    if ds is not None:
        problems += _unknown(((f"datasets.{n}", n) for n in cfg.datasets), ds, "dataset")
    if pt is not None:
        items = ((f"perturbations.names.{i}", n) for i, n in enumerate(cfg.perturbations.names))
        problems += _unknown(items, pt, "perturbation")
    if problems:
        raise ConfigError("config names are unknown:\n  " + "\n  ".join(problems))
