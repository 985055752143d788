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


def _registry_names(kind: str) -> list[str]:
    """Registered names of ``kind`` (``encoder``, ``dataset`` or ``perturbation``); the
    registries are imported here, lazily, since the encoders' may load torch."""
    if kind == "encoder":
        from crsbench.encoders import ENCODERS

        return ENCODERS.names()
    if kind == "dataset":
        from crsbench.datasets import DATASETS

        return DATASETS.names()
    from crsbench.perturb import PERTURBATIONS

    return PERTURBATIONS.names()


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

    ``encoders``, ``datasets`` and ``perturbations`` default to the names of the encoder,
    dataset and perturbation registries. Pass name lists to check without importing them.
    """
    enc = list(encoders) if encoders is not None else _registry_names("encoder")
    ds = list(datasets) if datasets is not None else _registry_names("dataset")
    pt = list(perturbations) if perturbations is not None else _registry_names("perturbation")
    problems = _unknown(
        ((f"encoders.{i}.name", e.name) for i, e in enumerate(cfg.encoders)), enc, "encoder"
    )
    problems += _unknown(((f"datasets.{n}", n) for n in cfg.datasets), ds, "dataset")
    items = ((f"perturbations.names.{i}", n) for i, n in enumerate(cfg.perturbations.names))
    problems += _unknown(items, pt, "perturbation")
    if problems:
        raise ConfigError("config names are unknown:\n  " + "\n  ".join(problems))
