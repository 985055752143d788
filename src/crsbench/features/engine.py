"""The extraction engine: decode once, perturb in the same pass at the run's working
resolution, hand the degraded image to the encoder's own preprocessing, encode in batches, cache.

See ``docs/features.md`` for the design and the cache key.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

import crsbench
from crsbench.core.errors import CacheError, ConfigError, DataError, EncoderError
from crsbench.core.types import Condition
from crsbench.datasets.bad_images import MAX_BAD_FRACTION
from crsbench.encoders.fold import FOLD_POLICY, encoder_pairs
from crsbench.features.cache import FEATURE_FORMAT_VERSION, FeatureCache, make_key, sha256_text
from crsbench.features.decode import DECODE_POLICY
from crsbench.features.loader import (
    PerturbFn,
    feature_code_hash,
    file_fingerprint,
    resolve_perturb,
)
from crsbench.features.precision import resolve_precision
from crsbench.features.resolution import PERTURB_RESOLUTION_POLICY
from crsbench.features.resolution import working_size as run_working_size
from crsbench.features.results import ExtractionResult, FeatureArray, as_condition
from crsbench.features.runner import PendingWork, run_pending

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


def extract(
    encoder: Any,
    image_ids: Sequence[str],
    paths: Sequence[str],
    *,
    cache: FeatureCache,
    dataset_revision: str,
    conditions: Sequence[Condition | tuple[str, int] | str] = (("clean", 0),),
    depths: Sequence[float] = (1.0,),
    batch_size: int = 64,
    num_workers: int | None = None,
    working_size: int | None = None,
    progress: bool = True,
    shard_size: int = 512,
    max_bad_fraction: float = MAX_BAD_FRACTION,
    dtype: str = "float32",
    perturb_fn: PerturbFn | None = None,
    perturbed_depths: Sequence[float] | None = None,
    precision: str = "auto",
    fold_batchnorm: bool = True,
) -> ExtractionResult:
    """Extract features of every image under every condition and layer depth, cached.

    Each image is decoded once (:mod:`crsbench.features.decode`), resized once to the working
    resolution W, and every condition is applied to that W x W array in the same worker pass;
    the encoder's own preprocessing (``encoder.preprocess``: resize, crop or pad to its input
    size) then runs on the degraded image, so every encoder extracted at the same W receives
    the same degraded pixels (:mod:`crsbench.features.resolution`). Images are encoded in batches under ``torch.inference_mode()`` (bf16 autocast and channels-last
    on CUDA); all depths come from one forward pass. Work is committed per shard of
    ``shard_size`` images, so a killed run resumes at the first uncommitted shard; memory is
    bounded by one shard plus the loader's prefetch, whatever the dataset size.

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
    conditions : sequence
        ``("clean", 0)`` and/or ``(perturbation, severity)`` pairs or Conditions.
    depths : sequence of float
        Relative layer depths in (0, 1].
    batch_size : int
        Images per forward pass.
    num_workers : int, optional
        Decoding processes (default: CPU count - 1, at most 8; 0 decodes in this process).
    working_size : int, optional
        Working resolution W of the run, at which images are decoded and perturbed: pass the
        run's value (:func:`crsbench.features.resolution.working_size` over every encoder of
        the run) so all encoders get the same degraded image. Default: the rule applied to
        this encoder alone, ``max(224, input size)``. Must be at least the encoder's input
        size.
    progress : bool
        Show a progress bar with images/s.
    shard_size : int
        Images per committed shard.
    max_bad_fraction : float
        The run fails (after recording) if more than this share of images cannot be decoded.
    dtype : {"float32", "float16"}
        Stored feature dtype.
    perturb_fn : callable, optional
        Replaces ``crsbench.perturb.apply``; versioned by its source in the key.
    perturbed_depths : sequence of float, optional
        Depths kept for the non-clean conditions (a subset of ``depths``; default: all of
        them). All taps still come from the one forward pass; this only limits what is stored.
    precision : {"auto", "fp32", "bf16"}
        Arithmetic of the forward pass: ``bf16`` is autocast to bfloat16 (weights and
        features stay float32). ``auto`` here, unresolved by a check, is fp32
        (:func:`crsbench.features.precision.resolve_precision`); a run resolves it first with
        :func:`crsbench.features.precision_check.decide_precision`. It enters the cache key.
    fold_batchnorm : bool
        Fold eval-mode batch norms into the convolutions that feed them for the duration of
        the run (:func:`crsbench.encoders.fold.batchnorm_folded`: checked on a probe input,
        the encoder restored afterwards). Same features to float32 rounding, fewer passes
        over the activations. Enters the cache key when the encoder has pairs to fold.

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
    import torch

    t0 = time.perf_counter()
    ids = _validate(image_ids, paths, dataset_revision)
    paths = [str(p) for p in np.asarray(paths).tolist()]
    conds = list(dict.fromkeys(as_condition(c) for c in conditions))
    deps = [float(d) for d in dict.fromkeys(depths)]
    if not conds or not deps or any(not 0.0 < d <= 1.0 for d in deps):
        raise ConfigError(f"conditions must be non-empty and depths in (0, 1]. Got {conds}, {deps}")
    p_deps = set(deps) if perturbed_depths is None else {float(d) for d in perturbed_depths}
    if not p_deps or not p_deps <= set(deps):
        raise ConfigError(
            f"perturbed_depths must be a non-empty subset of depths {deps}. "
            f"Got {sorted(p_deps)} instead"
        )
    if dtype not in ("float32", "float16"):
        raise ConfigError(f"dtype must be 'float32' or 'float16'. Got {dtype!r} instead.")
    if batch_size < 1 or shard_size < 1:
        raise ConfigError(f"batch_size and shard_size must be >= 1. Got {batch_size}, {shard_size}")
    size = run_working_size([encoder_input_size(encoder)], working_size, key="working_size")
    device = torch.device(getattr(encoder, "device", "cpu"))
    on_cuda = device.type == "cuda"
    channels_last = use_channels_last(encoder, on_cuda)
    bf16 = resolve_precision(precision, on_cuda) == "bf16"
    fold = bool(fold_batchnorm) and bool(encoder_pairs(encoder))
    perturb, perturb_version = resolve_perturb(perturb_fn)
    fingerprints = [file_fingerprint(p) for p in paths]  # a changed file changes the keys

    base = {
        "format": FEATURE_FORMAT_VERSION,
        "crsbench": crsbench.__version__,
        "decode_policy": DECODE_POLICY,
        "feature_code": feature_code_hash(),
        "encoder": encoder.card.name,
        "encoder_revision": str(getattr(encoder.card, "revision", "")),
        "weights_hash": str(encoder.weights_hash),
        "preprocess_hash": str(encoder.preprocess_hash),
        "dataset_revision": dataset_revision,
        "ids_sha256": sha256_text(ids),
        "files_sha256": sha256_text(fingerprints),
        "perturb_resolution": PERTURB_RESOLUTION_POLICY,
        "working_size": size,
        "precision": ("bf16-autocast" + ("" if on_cuda else ":cpu")) if bf16 else "fp32",
        "memory_format": "channels_last" if channels_last else "contiguous",
        "dtype": dtype,
        "batchnorm_fold": FOLD_POLICY if fold else "none",
    }
    final_parts: dict[_Entry, dict[str, Any]] = {}
    for ci, c in enumerate(conds):
        for di, d in enumerate(deps):
            if c.name != "clean" and d not in p_deps:
                continue
            pv = None if c.name == "clean" else perturb_version
            final_parts[(ci, di)] = {
                **base,
                "condition": c.name,
                "severity": c.severity,
                "perturbation_version": pv,
                "depth": d,
            }
    final_keys = {e: make_key(p) for e, p in final_parts.items()}
    result = ExtractionResult()
    n_events = len(cache.events)
    finals = {e: cache.get(k) for e, k in final_keys.items()}
    todo = [e for e, r in finals.items() if r.status != "hit"]

    shards = [list(range(i, min(i + shard_size, len(ids)))) for i in range(0, len(ids), shard_size)]
    shard_keys: dict[tuple[int, _Entry], str] = {}
    shard_parts: dict[tuple[int, _Entry], dict[str, Any]] = {}
    pending: dict[int, set[_Entry]] = {}
    entry_keys = {
        e: make_key({k: v for k, v in final_parts[e].items() if k != "files_sha256"}) for e in todo
    }
    for s, rows in enumerate(shards):
        sh = sha256_text([ids[r] for r in rows])
        for e in todo:
            parts = {  # the files enter per shard, so a changed file redoes only its shard
                "entry": entry_keys[e],
                "shard": s,
                "shard_size": shard_size,
                "shard_ids": sh,
                "shard_files": sha256_text([fingerprints[r] for r in rows]),
            }
            shard_parts[(s, e)], shard_keys[(s, e)] = parts, make_key(parts)
            if cache.get(shard_keys[(s, e)]).status != "hit":
                pending.setdefault(s, set()).add(e)

    if pending:
        work = PendingWork(
            encoder=encoder,
            torch=torch,
            cache=cache,
            ids=ids,
            paths=paths,
            shards=shards,
            pending=pending,
            shard_keys=shard_keys,
            shard_parts=shard_parts,
            conds=conds,
            deps=deps,
            size=size,
            input_size=encoder_input_size(encoder),
            perturb=perturb,
            batch_size=batch_size,
            num_workers=num_workers,
            progress=progress,
            dtype=dtype,
            on_cuda=on_cuda,
            bf16=bf16,
            channels_last=channels_last,
            fold_batchnorm=fold,
            dataset_revision=dataset_revision,
            fingerprints=fingerprints,
        )
        result.n_decoded = run_pending(work)

    bad: dict[str, dict[str, Any]] = {}
    shard_reads: dict[_Entry, list[Any]] = {}
    for e in todo:
        reads = [cache.get(shard_keys[(s, e)]) for s in range(len(shards))]
        if any(r.status != "hit" for r in reads):
            raise CacheError(
                f"shard entries for {final_keys[e]} vanished or failed verification twice"
            )
        shard_reads[e] = reads
        for r in reads:
            for q in r.manifest.get("skipped", []):
                bad.setdefault(q["image_id"], q)
    for r in finals.values():
        if r.status == "hit":
            for q in r.manifest.get("skipped", []):
                bad.setdefault(q["image_id"], q)
    result.quarantined = sorted(bad.values(), key=lambda q: q["row"])
    if len(bad) > max_bad_fraction * len(ids):
        first = [(q["row"], q["path"], q["error_class"]) for q in result.quarantined[:20]]
        raise DataError(
            f"undecodable images must be at most {max_bad_fraction:.1%} of {len(ids)}. Got "
            f"{len(bad)} instead (ledger {cache.ledger_path}); first: {first}"
        )
    for e in todo:
        _assemble(cache, final_keys[e], final_parts[e], shard_reads.pop(e), result.quarantined)
    for e, key in final_keys.items():
        r = finals[e] if e not in todo else cache.get(key)
        if r.status != "hit":
            raise CacheError(f"final entry {key} failed verification right after being written")
        c, d = conds[e[0]], deps[e[1]]
        status = "computed" if e in todo else "hit"
        fa = FeatureArray(r.array, r.ids, c, d, key, status)  # type: ignore[arg-type]
        result.arrays[((c.name, c.severity), d)] = fa
    result.cache_events = list(cache.events[n_events:])
    result.seconds = time.perf_counter() - t0
    return result


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
        raise DataError(f"no image of dataset {parts['dataset_revision']} could be decoded")
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
