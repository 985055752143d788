"""The extraction engine: decode once, perturb in the same pass at the run's working
resolution, hand the degraded image to the encoder's own preprocessing, encode in batches, cache.

See ``docs/features.md`` for the design and the cache key.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import crsbench
from crsbench.core.errors import CacheError, ConfigError, DataError, EncoderError
from crsbench.core.types import Condition
from crsbench.encoders.fold import FOLD_POLICY, encoder_pairs
from crsbench.features.cache import FEATURE_FORMAT_VERSION, FeatureCache, make_key, sha256_text
from crsbench.features.decode import DECODE_POLICY
from crsbench.features.loader import (
    PerturbFn,
    feature_code_hash,
    file_fingerprint,
    perturbation_version,
    resolve_perturb,
)
from crsbench.features.precision import resolve_precision
from crsbench.features.resolution import PERTURB_RESOLUTION_POLICY
from crsbench.features.resolution import working_size as run_working_size
from crsbench.features.results import ExtractionResult, FeatureArray
from crsbench.features.runner import PendingWork, run_pending
from crsbench.features.settings import ExtractSettings
from crsbench.protocol import CLEAN

_Entry = tuple[int, int]  # (condition index, depth index)


def _validate(image_ids: Sequence[str], paths: Sequence[str], dataset_revision: str) -> list[str]:
    ids = [str(i) for i in np.asarray(image_ids).tolist()]
    if len(ids) != len(paths):
        raise DataError(
            f"image_ids and paths must have equal length. Got {len(ids)} and {len(paths)}"
        )
    if not ids:
        raise DataError("image_ids must be non-empty. Got 0 images instead.")
    if not isinstance(dataset_revision, str) or not dataset_revision:
        raise ConfigError(f"dataset_revision must be a non-empty str. Got {dataset_revision!r}")
    seen: dict[str, int] = {}
    dups: list[str] = []
    for row, i in enumerate(ids, start=1):
        if i in seen:
            dups.append(f"{i!r} (rows {seen[i]} and {row})")
        seen.setdefault(i, row)
    if dups:
        raise DataError(f"image ids must be unique. Got {len(dups)} duplicates: {dups[:20]}")
    return ids


def use_channels_last(encoder: Any, on_cuda: bool) -> bool:
    """Channels-last activations: on CUDA always; on CPU for convolutional encoders, where
    oneDNN's NHWC kernels are faster (EfficientNet-Lite0 at 128 px: 89 → 155 img/s here).
    Part of the cache key, since it may change the low bits of the features."""
    import torch

    module = getattr(encoder, "module", None)
    if on_cuda or module is None:
        return on_cuda
    n_conv = sum(isinstance(m, torch.nn.Conv2d) for m in module.modules())
    return n_conv > 1  # a ViT's single patch-embedding conv does not count


def encoder_input_size(encoder: Any) -> int:
    """The side of the images the encoder's forward pass takes (its build, else its card)."""
    s = getattr(encoder, "input_size", None) or getattr(encoder.card, "input_size", None)
    if isinstance(s, (tuple, list)):
        s = s[-1]
    if not isinstance(s, (int, np.integer)) or s < 1:
        raise EncoderError(f"encoder card input_size must be a positive int. Got {s!r} instead.")
    return int(s)


@dataclass(frozen=True)
class _Plan:
    """One extraction's inputs, resolved: what to extract, at which size and arithmetic,
    and the cache keys of its final entries (one per (condition index, depth index))."""

    encoder: Any
    cache: FeatureCache
    settings: ExtractSettings
    ids: list[str]
    paths: list[str]
    fingerprints: list[str]
    conds: list[Condition]
    deps: list[float]
    size: int
    on_cuda: bool
    bf16: bool
    channels_last: bool
    fold: bool
    perturb: PerturbFn | None  # None: crsbench.perturb unavailable (clean conditions only)
    dataset_revision: str
    final_parts: dict[_Entry, dict[str, Any]]


@dataclass
class _Shards:
    """The per-shard entries still to compute, and every shard entry's key and key parts."""

    shards: list[list[int]]
    keys: dict[tuple[int, _Entry], str] = field(default_factory=dict)
    parts: dict[tuple[int, _Entry], dict[str, Any]] = field(default_factory=dict)
    pending: dict[int, set[_Entry]] = field(default_factory=dict)


def _key_base(plan: _Plan) -> dict[str, Any]:
    """The key parts every final entry of the extraction shares."""
    enc, bounds = plan.encoder, plan.settings.image_bounds
    return {
        "format": FEATURE_FORMAT_VERSION,
        "crsbench": crsbench.__version__,
        "decode_policy": DECODE_POLICY,
        "feature_code": feature_code_hash(),
        "encoder": enc.card.name,
        "encoder_revision": str(getattr(enc.card, "revision", "")),
        "weights_hash": str(enc.weights_hash),
        "preprocess_hash": str(enc.preprocess_hash),
        "dataset_revision": plan.dataset_revision,
        "ids_sha256": sha256_text(plan.ids),
        "files_sha256": sha256_text(plan.fingerprints),
        "perturb_resolution": PERTURB_RESOLUTION_POLICY,
        "working_size": plan.size,
        "precision": ("bf16-autocast" + ("" if plan.on_cuda else ":cpu")) if plan.bf16 else "fp32",
        "memory_format": "channels_last" if plan.channels_last else "contiguous",
        "dtype": plan.settings.dtype,
        "batchnorm_fold": FOLD_POLICY if plan.fold else "none",
        # which images are quarantined: keys of the default bounds are kept as they were
        **({} if bounds.is_default else {"image_bounds": bounds.as_dict()}),
    }


def _plan(
    encoder: Any,
    image_ids: Sequence[str],
    paths: Sequence[str],
    cache: FeatureCache,
    dataset_revision: str,
    settings: ExtractSettings,
) -> _Plan:
    """Check the inputs and settings and resolve the extraction's keys."""
    import torch

    ids = _validate(image_ids, paths, dataset_revision)
    paths = [str(p) for p in np.asarray(paths).tolist()]
    conds, deps, p_deps = settings.resolved()
    size = run_working_size([encoder_input_size(encoder)], settings.working_size,
                            key="working_size")  # fmt: skip
    on_cuda = torch.device(getattr(encoder, "device", "cpu")).type == "cuda"
    perturb, perturb_version = resolve_perturb(settings.perturb_fn)
    plan = _Plan(
        encoder=encoder, cache=cache, settings=settings, ids=ids, paths=paths,
        fingerprints=[file_fingerprint(p) for p in paths],  # a changed file changes the keys
        conds=conds, deps=deps, size=size, on_cuda=on_cuda,
        bf16=resolve_precision(settings.precision, on_cuda) == "bf16",
        channels_last=use_channels_last(encoder, on_cuda),
        fold=bool(settings.fold_batchnorm) and bool(encoder_pairs(encoder)),
        perturb=perturb, dataset_revision=dataset_revision, final_parts={},
    )  # fmt: skip
    base = _key_base(plan)
    for ci, c in enumerate(conds):
        for di, d in enumerate(deps):
            if c.name != CLEAN and d not in p_deps:
                continue
            pv = None if c.name == CLEAN else perturbation_version(perturb_version, c.name)
            plan.final_parts[(ci, di)] = {**base, "condition": c.name, "severity": c.severity,
                                          "perturbation_version": pv, "depth": d}  # fmt: skip
    return plan


def _shards(plan: _Plan, todo: list[_Entry]) -> _Shards:
    """Key every shard of every entry still to compute; note the shards not yet cached."""
    n, step = len(plan.ids), plan.settings.shard_size
    out = _Shards([list(range(i, min(i + step, n))) for i in range(0, n, step)])
    entry_keys = {
        e: make_key({k: v for k, v in plan.final_parts[e].items() if k != "files_sha256"})
        for e in todo
    }
    for s, rows in enumerate(out.shards):
        sh = sha256_text([plan.ids[r] for r in rows])
        for e in todo:
            parts = {  # the files enter per shard, so a changed file redoes only its shard
                "entry": entry_keys[e],
                "shard": s,
                "shard_size": step,
                "shard_ids": sh,
                "shard_files": sha256_text([plan.fingerprints[r] for r in rows]),
            }
            out.parts[(s, e)], out.keys[(s, e)] = parts, make_key(parts)
            if plan.cache.get(out.keys[(s, e)]).status != "hit":
                out.pending.setdefault(s, set()).add(e)
    return out


def _encode_pending(plan: _Plan, shards: _Shards) -> int:
    """Decode, perturb and encode the shards not yet cached; return the images decoded."""
    import torch

    from crsbench.features.forward_threads import cap_torch_threads

    cap_torch_threads(torch, plan.on_cuda)
    s = plan.settings
    work = PendingWork(
        encoder=plan.encoder, torch=torch, cache=plan.cache, ids=plan.ids, paths=plan.paths,
        shards=shards.shards, pending=shards.pending, shard_keys=shards.keys,
        shard_parts=shards.parts, conds=plan.conds, deps=plan.deps, size=plan.size,
        input_size=encoder_input_size(plan.encoder), perturb=plan.perturb,
        batch_size=s.batch_size, num_workers=s.num_workers, progress=s.progress, dtype=s.dtype,
        on_cuda=plan.on_cuda, bf16=plan.bf16, channels_last=plan.channels_last,
        fold_batchnorm=plan.fold, dataset_revision=plan.dataset_revision,
        fingerprints=plan.fingerprints, bounds=s.image_bounds,
    )  # fmt: skip
    return run_pending(work)


def _read_shards(plan: _Plan, shards: _Shards, todo: list[_Entry]) -> dict[_Entry, list[Any]]:
    """The committed shards of every entry still to assemble (each must read back)."""
    out = {}
    for e in todo:
        reads = [plan.cache.get(shards.keys[(s, e)]) for s in range(len(shards.shards))]
        if any(r.status != "hit" for r in reads):
            raise CacheError(
                f"shard entries for {make_key(plan.final_parts[e])} vanished or failed "
                "verification twice"
            )
        out[e] = reads
    return out


def _quarantined(plan: _Plan, reads: list[Any]) -> list[dict[str, Any]]:
    """The undecodable images the reads record, in row order; too many of them raise."""
    bad: dict[str, dict[str, Any]] = {}
    for r in reads:
        for q in r.manifest.get("skipped", []):
            bad.setdefault(q["image_id"], q)
    out = sorted(bad.values(), key=lambda q: q["row"])
    limit, n = plan.settings.max_bad_fraction, len(plan.ids)
    if len(bad) > limit * n:
        first = [(q["row"], q["path"], q["error_class"]) for q in out[:20]]
        raise DataError(
            f"undecodable images must be at most {limit:.1%} of {n}. Got "
            f"{len(bad)} instead (ledger {plan.cache.ledger_path}); first: {first}"
        )
    return out


def extract(
    encoder: Any,
    image_ids: Sequence[str],
    paths: Sequence[str],
    *,
    cache: FeatureCache,
    dataset_revision: str,
    settings: ExtractSettings | None = None,
) -> ExtractionResult:
    """Extract features of every image under every condition and layer depth, cached.

    Each image is decoded once (:mod:`crsbench.features.decode`), resized once to the working
    resolution W, and every condition is applied to that W x W array in the same worker pass;
    the encoder's own preprocessing (``encoder.preprocess``: resize, crop or pad to its input
    size) then runs on the degraded image, so every encoder extracted at the same W receives
    the same degraded pixels (:mod:`crsbench.features.resolution`). Images are encoded in
    batches under ``torch.inference_mode()`` (bf16 autocast and channels-last on CUDA); all
    depths come from one forward pass. Work is committed per shard of ``shard_size`` images,
    so a killed run resumes at the first uncommitted shard; memory is bounded by one shard,
    up to three batches in the forward threads (on CPU two passes run side by side,
    :mod:`crsbench.features.forward_threads`) and the loader's prefetch, whatever the dataset
    size.

    Parameters
    ----------
    encoder : Encoder
        Has ``card`` (``name``, ``input_size``), ``device``, ``weights_hash``,
        ``preprocess_hash``, ``preprocess`` and ``forward_features(x, depths)``.
    image_ids, paths : sequence of str
        Unique image ids and their files, in the order rows are wanted.
    cache : FeatureCache
        Where entries are read and committed.
    dataset_revision : str
        Revision (manifest hash) of the dataset the ids come from; enters the key.
    settings : ExtractSettings, optional
        Conditions, depths, batching, working size, precision (default: clean, depth 1.0).

    Returns
    -------
    ExtractionResult
        ``result[(condition, depth)]`` is a :class:`FeatureArray`.

    Raises
    ------
    DataError
        Duplicate ids, too many undecodable images, or features identical for all images.
    CacheError
        NaN/Inf features (nothing is committed for that shard).
    """
    t0 = time.perf_counter()
    plan = _plan(encoder, image_ids, paths, cache, dataset_revision, settings or ExtractSettings())
    final_keys = {e: make_key(p) for e, p in plan.final_parts.items()}
    result = ExtractionResult()
    n_events = len(cache.events)
    finals = {e: cache.get(k) for e, k in final_keys.items()}
    todo = [e for e, r in finals.items() if r.status != "hit"]
    shards = _shards(plan, todo)
    if shards.pending:
        result.n_decoded = _encode_pending(plan, shards)
    shard_reads = _read_shards(plan, shards, todo)
    hits = [r for r in finals.values() if r.status == "hit"]
    result.quarantined = _quarantined(plan, [r for e in todo for r in shard_reads[e]] + hits)
    for e in todo:
        _assemble(cache, final_keys[e], plan.final_parts[e], shard_reads.pop(e),
                  result.quarantined)  # fmt: skip
    for e, key in final_keys.items():
        r = finals[e] if e not in todo else cache.get(key)
        if r.status != "hit":
            raise CacheError(f"final entry {key} failed verification right after being written")
        c, d = plan.conds[e[0]], plan.deps[e[1]]
        status = "computed" if e in todo else "hit"
        fa = FeatureArray(r.array, r.ids, c, d, key, status)  # type: ignore[arg-type]
        result.arrays[((c.name, c.severity), d)] = fa
    result.cache_events = list(cache.events[n_events:])
    result.seconds = time.perf_counter() - t0
    return result


class NoImageDecoded(DataError):
    """Not one image of an extraction decoded; ``skipped`` lists each with its error."""

    def __init__(self, message: str, skipped: list[dict[str, Any]]) -> None:
        super().__init__(message)
        self.skipped = skipped


def _assemble(
    cache: FeatureCache,
    key: str,
    parts: dict[str, Any],
    reads: list[Any],
    skipped: list[dict[str, Any]],
) -> None:
    """Stream committed shards into the final entry; refuse a collapsed (constant) result."""
    ids = [str(i) for r in reads for i in r.ids]
    nonempty = [np.asarray(r.array) for r in reads if r.array.shape[0]]
    if not ids:
        raise NoImageDecoded(
            f"no image of dataset {parts['dataset_revision']} could be decoded", skipped
        )
    first = nonempty[0][0]
    if len(ids) > 1 and not any(bool((a != first).any()) for a in nonempty):
        raise DataError(
            f"features of {parts['encoder']} under {parts['condition']}@{parts['severity']} "
            f"must differ between images. Got identical features for all {len(ids)} images "
            "instead (constant inputs or a collapsed encoder)"
        )

    def fill(out: np.ndarray) -> None:
        pos = 0
        for a in nonempty:
            out[pos : pos + len(a)] = a
            pos += len(a)

    with cache.lock(key[:32]):
        if cache.get(key).status != "hit":
            shape = (len(ids), first.shape[0])
            extra = {"skipped": skipped}
            cache.put_streaming(key, shape, parts["dtype"], ids, parts, fill, extra)
