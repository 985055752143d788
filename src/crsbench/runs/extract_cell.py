"""Features one cell needs, through the content-addressed cache (the pixel side of a cell)."""

from __future__ import annotations

from typing import Any

import numpy as np

from crsbench.config import BenchmarkConfig
from crsbench.runs.plan import CellPlan

_ENCODERS: dict[tuple[str, str, int | None], Any] = {}


def resolve_device(device: str) -> str:
    """``auto`` → ``cuda`` when a GPU is visible, else ``cpu``."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def get_encoder(cfg: BenchmarkConfig, name: str) -> Any:
    """Build (once per process) the encoder named in ``cfg`` with its per-encoder overrides."""
    from crsbench.encoders import build

    spec = next(e for e in cfg.encoders if e.name == name)
    device = resolve_device(cfg.device)
    key = (name, device, spec.input_size)
    if key not in _ENCODERS:
        enc = build(
            name,
            device=device,
            weights_path=spec.weights_path,
            allow_remote_code=spec.allow_remote_code,
        )
        _ENCODERS[key] = enc.set_input_size(spec.input_size)
    return _ENCODERS[key]


def encoder_revision(encoder: Any) -> str:
    """Provenance string of an encoder: source revision and weights hash."""
    rev = getattr(encoder.card, "revision", None) or "unpinned"
    return f"{rev}|weights-sha256:{encoder.weights_hash}"


def extract_cell_features(
    cfg: BenchmarkConfig, plan: CellPlan, prep: Any, target: Any | None, *, progress: bool = True
) -> tuple[dict[str, Any], str]:
    """Clean features of every row at every layer, perturbed test features, shift features.

    Returns
    -------
    (features, encoder_revision)
        ``features`` has keys ``clean`` (depth → FeatureArray), ``perturbed``
        ((name, severity) → FeatureArray) and, for a shift source, ``shift``.
    """
    from crsbench.features import FeatureCache, extract

    enc = get_encoder(cfg, plan.encoder)
    cache = FeatureCache(cfg.resolved_cache_dir)
    common = {
        "cache": cache,
        "batch_size": cfg.batch_size,
        "num_workers": cfg.num_workers,
        "progress": progress,
    }
    ds = prep.dataset
    res = extract(
        enc,
        ds.image_ids,
        ds.paths,
        dataset_revision=ds.revision,
        conditions=(("clean", 0),),
        depths=tuple(cfg.layers),
        **common,
    )
    feats: dict[str, Any] = {"clean": {d: res[("clean", d)] for d in cfg.layers}}
    test = np.asarray(prep.splits.test)
    kept = np.isin(ds.image_ids[test], res[("clean", 1.0)].ids)
    test = test[kept]
    feats["perturbed"] = {}
    if plan.conditions:
        res_p = extract(
            enc,
            ds.image_ids[test],
            ds.paths[test],
            dataset_revision=ds.revision,
            conditions=plan.conditions,
            depths=(1.0,),
            **common,
        )
        feats["perturbed"] = {c: res_p[(c, 1.0)] for c in plan.conditions}
    if target is not None:
        tds, rows = target.dataset, target.eval_rows
        res_s = extract(
            enc,
            tds.image_ids[rows],
            tds.paths[rows],
            dataset_revision=tds.revision,
            conditions=(("clean", 0),),
            depths=(1.0,),
            **common,
        )
        feats["shift"] = res_s[("clean", 1.0)]
    return feats, encoder_revision(enc)
