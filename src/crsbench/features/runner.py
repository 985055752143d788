"""The encoding loop of the engine: stream batches from the decode workers, encode every
condition and depth in one forward pass per chunk, commit each shard when it completes."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from crsbench.core.errors import EncoderError
from crsbench.datasets.bounds import ImageBounds
from crsbench.encoders.fold import batchnorm_folded
from crsbench.features.forward_threads import ForwardThreads, forward_threads, in_order
from crsbench.features.loader import DecodeSet, collate, shard_batches

#: On CPU, a forward pass takes at most this many input pixels (8 images at 224²): larger
#: batches spill the activations out of the caches and run slower on CPU (ResNet-50 at 224 on
#: 2 cores, channels-last: 19.3 img/s at batch 8, 17.0 at 32; EfficientNet-Lite0: 79 vs 56).
#: Deterministic (a function of the input size only), so reruns give identical bytes.
CPU_FORWARD_PIXELS = 8 * 224 * 224

#: A decode task holds at most this many working-resolution pixels (all conditions of all its
#: images: 64 images x 16 conditions at 224 px, about 150 MB of uint8 RGB), so a large working
#: size (896 px: 4 images a task) does not multiply the loader's memory.
LOADER_TASK_PIXELS = 64 * 16 * 224 * 224


def forward_chunk(batch_size: int, size: int, on_cuda: bool) -> int:
    """Images per forward pass: ``batch_size`` on CUDA; on CPU capped by
    :data:`CPU_FORWARD_PIXELS` (at least 1)."""
    if on_cuda:
        return batch_size
    return max(1, min(batch_size, CPU_FORWARD_PIXELS // (size * size)))


def loader_batch(
    batch_size: int, chunk: int, n_conditions: int, on_cuda: bool, working_size: int = 224
) -> int:
    """Images per decode task: ``batch_size`` on CUDA; on CPU just enough images to fill one
    forward chunk with all their conditions (at least 1), so decoding the next task overlaps
    encoding this one from the first image on (with 16 conditions: one image per task). Both
    are capped by :data:`LOADER_TASK_PIXELS` at the working size."""
    n_cond = max(1, n_conditions)
    want = batch_size if on_cuda else chunk // n_cond
    cap = LOADER_TASK_PIXELS // (n_cond * working_size * working_size)
    return max(1, min(batch_size, want, cap))


def _default_workers() -> int:
    """Loader processes: one per usable core beside the encoding one (at most 8)."""
    from crsbench.core.workers import available_cores

    return max(0, min(8, available_cores() - 1))


@dataclass
class PendingWork:
    """What :func:`run_pending` needs from the engine's plan: the inputs, the shards still to
    encode and their cache keys, and the run settings (see :func:`crsbench.features.extract`)."""

    encoder: Any
    torch: Any
    cache: Any
    ids: list[str]
    paths: list[str]
    shards: list[list[int]]
    pending: dict[int, set[tuple[int, int]]]
    shard_keys: dict[tuple[int, tuple[int, int]], str]
    shard_parts: dict[tuple[int, tuple[int, int]], dict[str, Any]]
    conds: list[Any]
    deps: list[float]
    size: int
    input_size: int
    perturb: Any
    batch_size: int
    num_workers: int | None
    progress: bool
    dtype: str
    on_cuda: bool
    bf16: bool
    channels_last: bool
    dataset_revision: str
    fingerprints: list[str] | None = None
    fold_batchnorm: bool = False
    bounds: ImageBounds | None = None


def decode_worker_init() -> Callable[[int], None] | None:
    """What each decode worker runs first: import the config's modules (``encoder_modules``).

    A perturbation (or encoder) such a module registers is then known in a worker started by
    *spawn* (macOS, Windows) as in a forked one, which has it already (the import is skipped).

    Returns
    -------
    callable or None
        ``worker_init_fn`` for the DataLoader; ``None`` when no module was imported.
    """
    from crsbench.encoders.plugins import loaded_encoder_modules

    modules = loaded_encoder_modules()
    return partial(_import_modules, modules) if modules else None


def _import_modules(modules: tuple[str, ...], worker_id: int) -> None:
    from crsbench.encoders.plugins import load_encoder_modules

    load_encoder_modules(modules)


def run_pending(job: PendingWork) -> int:
    """Decode and perturb at the working size ``job.size``, preprocess to the encoder's input,
    encode the shards in ``job.pending``; commit each one when done."""
    from torch.utils.data import DataLoader
    from tqdm.auto import tqdm

    needed = sorted({ci for es in job.pending.values() for ci, _ in es})
    cond_sel = [job.conds[ci] for ci in needed]
    dataset = DecodeSet(job.paths, job.ids, job.size, cond_sel, job.perturb, job.fingerprints,
                        job.bounds)  # fmt: skip
    order = sorted(job.pending)
    chunk = forward_chunk(job.batch_size, job.input_size, job.on_cuda)
    per_task = loader_batch(job.batch_size, chunk, len(needed), job.on_cuda, job.size)
    batches = shard_batches([job.shards[s] for s in order], per_task)
    workers = _default_workers() if job.num_workers is None else int(job.num_workers)
    loader: DataLoader[Any] = DataLoader(
        # DataLoader takes any map-style object (len, getitem); DecodeSet stays torch-free
        dataset,  # type: ignore[arg-type]
        batch_sampler=batches,
        num_workers=workers,
        collate_fn=collate,
        pin_memory=job.on_cuda,
        prefetch_factor=2 if workers else None,
        persistent_workers=False,
        worker_init_fn=decode_worker_init(),
    )
    module = getattr(job.encoder, "module", None)
    if module is not None:
        module.eval()
    row_to_shard = {r: s for s in order for r in job.shards[s]}
    envelope = {
        "torch": job.torch.__version__,
        "device": str(job.encoder.device),
        "numpy": np.__version__,
    }
    bar = tqdm(
        total=sum(len(job.shards[s]) for s in order),
        unit="img",
        disable=None if job.progress else True,  # None: off unless stderr is a terminal
        desc=f"extract {job.encoder.card.name}",
        dynamic_ncols=True,
    )
    fold = batchnorm_folded(job.encoder) if job.fold_batchnorm else nullcontext(0)
    n_forward = forward_threads(
        job.torch.get_num_threads(), job.on_cuda, getattr(job.encoder, "concurrent_forwards", False)
    )
    how = _Stream(needed, row_to_shard, envelope, chunk)
    with fold, job.torch.inference_mode(), ForwardThreads(job.torch, n_forward) as forwards:
        if module is not None and job.channels_last:  # after the fold: folded weights too
            module.to(memory_format=job.torch.channels_last)
        n_done = _stream(job, loader, bar, how, forwards)
    bar.close()
    return n_done


@dataclass(frozen=True)
class _Stream:
    """How the loader's batches map to work: the condition indices decoded, each row's shard,
    the software envelope recorded with every shard and the images per forward pass."""

    needed: list[int]
    row_to_shard: dict[int, int]
    envelope: dict[str, str]
    chunk: int


def _stream(job: PendingWork, loader: Any, bar: Any, how: _Stream, forwards: ForwardThreads) -> int:
    """Encode every batch the loader yields (the forward passes in ``forwards``' threads); take
    the results in the loader's order; commit each shard as soon as it is complete."""
    buf: dict[int, dict[str, Any]] = {}
    encode = partial(_batch_features, job, how.chunk)
    n_done = 0
    for batch, feats in in_order(forwards, encode, ((batch,) for batch in loader)):
        n_done += _take(job, bar, how, buf, batch, feats)
    return n_done


def _batch_features(
    job: PendingWork, chunk: int, batch: dict[str, Any]
) -> tuple[dict[str, Any], list[list[np.ndarray]] | None]:
    """A loader batch and its features (None when every image of it failed to decode)."""
    images = batch["images"]
    return batch, (None if images is None else _encode(job, images, chunk))


def _take(
    job: PendingWork,
    bar: Any,
    how: _Stream,
    buf: dict[int, dict[str, Any]],
    batch: dict[str, Any],
    feats: list[list[np.ndarray]] | None,
) -> int:
    """File one batch's features and failures under its shard; commit the shard when complete.
    Returns the batch's rows."""
    rows_all = batch["rows"] + [r for r, _ in batch["failed"]]
    s = how.row_to_shard[rows_all[0]]
    st = buf.setdefault(s, {"rows": [], "feats": {}, "failed": [], "seen": 0})
    st["seen"] += len(rows_all)
    for r, f in batch["failed"]:
        st["failed"].append(
            {
                "row": r + 1,
                "image_id": job.ids[r],
                "path": job.paths[r],
                "dataset_revision": job.dataset_revision,
                **f,
            }
        )
    if feats is not None:
        st["rows"].extend(batch["rows"])
        for k, ci in enumerate(how.needed):
            for di in range(len(job.deps)):
                st["feats"].setdefault((ci, di), []).append(feats[di][k])
    bar.update(len(rows_all))
    if st["seen"] == len(job.shards[s]):
        _commit_shard(job, s, buf.pop(s), how.envelope)
    return len(rows_all)


def _encode(job: PendingWork, images: Any, batch_size: int) -> list[list[np.ndarray]]:
    """images: (B, n_cond, 3, W, W) uint8 at the working size → per depth, per condition,
    (B, D) float32 arrays; ``encoder.preprocess`` brings each chunk to the encoder's input."""
    encoder, torch, deps = job.encoder, job.torch, job.deps
    bf16, channels_last = job.bf16, job.channels_last
    b, nc = images.shape[:2]
    flat = images.transpose(0, 1).reshape(nc * b, *images.shape[2:])
    outs: dict[float, list[Any]] = {d: [] for d in deps}
    for i in range(0, flat.shape[0], batch_size):
        x = flat[i : i + batch_size].to(encoder.device, non_blocking=True)
        x = encoder.preprocess(x)
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        with torch.autocast(device_type=x.device.type, dtype=torch.bfloat16, enabled=bf16):
            got = encoder.forward_features(x, depths=tuple(deps))
        for d in deps:
            if d not in got:
                raise EncoderError(
                    f"{encoder.card.name}.forward_features must return depth {d}. Got {sorted(got)}"
                )
            t = got[d]
            if t.ndim != 2 or t.shape[0] != x.shape[0]:
                raise EncoderError(
                    f"{encoder.card.name} depth {d} must give (N, D). Got {tuple(t.shape)}"
                )
            outs[d].append(t.float().cpu().numpy())
    res = []
    for d in deps:
        allf = np.concatenate(outs[d]).reshape(nc, b, -1)
        res.append([allf[k] for k in range(nc)])
    return res


def _commit_shard(job: PendingWork, s: int, st: dict[str, Any], envelope: dict[str, str]) -> None:
    """Write every missing (condition, depth) entry of shard ``s`` (rows in requested order)."""
    cache, entries, ids, dtype = job.cache, job.pending[s], job.ids, job.dtype
    shard_keys, shard_parts = job.shard_keys, job.shard_parts
    order = np.argsort(st["rows"], kind="stable")
    rows = [st["rows"][i] for i in order]
    row_ids = [ids[r] for r in rows]
    failed = sorted(st["failed"], key=lambda q: q["row"])
    cache.append_quarantine(failed)
    for e in sorted(entries):
        key = shard_keys[(s, e)]
        parts_list = st["feats"].get(e, [])
        arr = np.concatenate(parts_list)[order] if parts_list else np.zeros((0, 0), np.float32)
        arr = arr.astype(dtype)
        with cache.lock(key[:32]):
            if cache.get(key).status == "hit":
                continue
            cache.put(
                key,
                arr,
                row_ids,
                shard_parts[(s, e)],
                extra={"skipped": failed, "envelope": envelope},
            )
