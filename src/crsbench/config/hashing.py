"""The config hash: sha256 of the canonical semantic content."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from crsbench.config.loading import _anchors_is_path
from crsbench.config.models import (
    EXECUTION_FIELDS,
    OUTPUT_DIR_VAR,
    BenchmarkConfig,
)

# ----------------------------------------------------------------------------- hashing


def _canon(value: Any, out: Path) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str | int):
        return value
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, Path):
        p = os.path.normpath(value)
        if p == os.path.normpath(out) or p.startswith(os.path.normpath(out) + os.sep):
            return OUTPUT_DIR_VAR + p[len(os.path.normpath(out)) :].replace(os.sep, "/")
        return p.replace(os.sep, "/")
    if isinstance(value, Mapping):
        return {str(k): _canon(v, out) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canon(v, out) for v in value]
    raise TypeError(f"cannot canonicalise {type(value).__name__}")


#: List-valued keys whose order carries no meaning: sorted before hashing.
_SET_KEYS = ("seeds", "fractions", "recalibrators", "layers")


def canonical_content(cfg: BenchmarkConfig) -> dict[str, Any]:
    """The semantic content that :func:`config_hash` hashes (execution settings removed)."""
    dumped = cfg.model_dump(exclude=set(EXECUTION_FIELDS))
    content = _canon(dumped, cfg.output_dir)
    for key in _SET_KEYS:
        content[key] = sorted(content[key])
    content["perturbations"]["names"] = sorted(content["perturbations"]["names"])
    content["perturbations"]["severities"] = sorted(content["perturbations"]["severities"])
    content["probes"]["logistic"]["c_grid"] = sorted(content["probes"]["logistic"]["c_grid"])
    if content["exclude_cells"]:
        content["exclude_cells"] = sorted(
            content["exclude_cells"], key=lambda c: (c["encoder"], c["dataset"])
        )
    else:  # no exclusion: the hash of a config written before the key existed is kept
        del content["exclude_cells"]
    _drop_later_defaults(content)
    lora = content["regimes"]["lora"]
    lora["seeds"] = sorted(lora["seeds"])
    for key in ("fractions", "encoders", "lr_factors", "datasets"):
        if lora.get(key) is not None:
            lora[key] = sorted(lora[key])
    if not _anchors_is_path(cfg.anchors):
        content["anchors"] = cfg.anchors
    else:
        content["anchors"] = _canon(Path(cfg.anchors), cfg.output_dir)
    return content


def config_json(cfg: BenchmarkConfig) -> str:
    """The full resolved config (execution settings included) as canonical JSON text."""
    content = _canon(cfg.model_dump(), Path("/nonexistent-output"))
    return json.dumps(_drop_later_defaults(content), sort_keys=True)


def _drop_later_defaults(content: dict[str, Any]) -> dict[str, Any]:
    """Remove keys added after version 1 when they hold their default (``encoders[].weights:
    pretrained``, ``encoders[].recipe: null``, ``regimes.lora.datasets: null``,
    ``encoder_modules: []``), so the hash and stored text of a config written before they
    existed are kept."""
    if content.get("encoder_modules", "absent") == []:
        del content["encoder_modules"]
    for enc in content["encoders"]:
        if enc["weights"] == "pretrained":
            del enc["weights"]
        if enc.get("recipe", "absent") is None:
            del enc["recipe"]
    lora = content["regimes"]["lora"]
    if lora["datasets"] is None:
        del lora["datasets"]
    return content


def config_hash(cfg: BenchmarkConfig) -> str:
    """sha256 hex digest of :func:`canonical_content` as sorted-key compact JSON.

    Reordered keys, ``0.1`` vs ``1e-1``, ``./data`` vs an absolute path, list order of
    set-like keys and execution settings leave it unchanged; any semantic edit changes it.
    """
    text = json.dumps(canonical_content(cfg), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
