"""The encoding loop of the engine: stream batches from the decode workers, encode every
condition and depth in one forward pass per chunk, commit each shard when it completes."""

from __future__ import annotations

from typing import Any

import numpy as np

from crsbench.core.errors import EncoderError
from crsbench.features.loader import DecodeSet, collate, shard_batches


def _default_workers() -> int:
    import os

    return max(0, min(8, (os.cpu_count() or 1) - 1))


def run_pending(
    encoder,
    torch,
    cache,
    ids,
    paths,
    shards,
    pending,
    shard_keys,
    shard_parts,
    conds,
    deps,
    size,
    perturb,
    batch_size,
    num_workers,
    progress,
    dtype,
    on_cuda,
    dataset_revision,
) -> int:
    """Decode, perturb and encode the shards in ``pending``; commit each one when done."""
    from torch.utils.data import DataLoader
    from tqdm.auto import tqdm

    needed = sorted({ci for es in pending.values() for ci, _ in es})
    cond_sel = [conds[ci] for ci in needed]
    dataset = DecodeSet(paths, ids, size, cond_sel, perturb)
    order = sorted(pending)
    batches = shard_batches([shards[s] for s in order], batch_size)
    workers = _default_workers() if num_workers is None else int(num_workers)
    loader = DataLoader(
        dataset,
        batch_sampler=batches,
        num_workers=workers,
        collate_fn=collate,
        pin_memory=on_cuda,
        prefetch_factor=2 if workers else None,
        persistent_workers=False,
    )
    module = getattr(encoder, "module", None)
    if module is not None:
        module.eval()
        if on_cuda:
            module.to(memory_format=torch.channels_last)
    row_to_shard = {r: s for s in order for r in shards[s]}
    envelope = {"torch": torch.__version__, "device": str(encoder.device), "numpy": np.__version__}
    buf: dict[int, dict[str, Any]] = {}
    n_done = 0
    bar = tqdm(
        total=sum(len(shards[s]) for s in order),
        unit="img",
        disable=not progress,
        desc=f"extract {encoder.card.name}",
        dynamic_ncols=True,
    )
    with torch.inference_mode():
        for batch in loader:
            rows_all = batch["rows"] + [r for r, _ in batch["failed"]]
            s = row_to_shard[rows_all[0]]
            st = buf.setdefault(s, {"rows": [], "feats": {}, "failed": [], "seen": 0})
            st["seen"] += len(rows_all)
            for r, f in batch["failed"]:
                st["failed"].append(
                    {
                        "row": r + 1,
                        "image_id": ids[r],
                        "path": paths[r],
                        "dataset_revision": dataset_revision,
                        **f,
                    }
                )
            if batch["images"] is not None:
                feats = _encode(encoder, torch, batch["images"], deps, batch_size, on_cuda)
                st["rows"].extend(batch["rows"])
                for k, ci in enumerate(needed):
                    for di in range(len(deps)):
                        st["feats"].setdefault((ci, di), []).append(feats[di][k])
            bar.update(len(rows_all))
            n_done += len(rows_all)
            if st["seen"] == len(shards[s]):
                _commit_shard(
                    cache, s, buf.pop(s), pending[s], shard_keys, shard_parts, ids, dtype, envelope
                )
    bar.close()
    return n_done


def _encode(encoder, torch, images, deps, batch_size, on_cuda) -> list[list[np.ndarray]]:
    """images: (B, n_cond, 3, S, S) uint8 → per depth, per condition, (B, D) float32 arrays."""
    b, nc = images.shape[:2]
    flat = images.transpose(0, 1).reshape(nc * b, *images.shape[2:])
    outs: dict[float, list[Any]] = {d: [] for d in deps}
    for i in range(0, flat.shape[0], batch_size):
        x = flat[i : i + batch_size].to(encoder.device, non_blocking=True)
        x = encoder.preprocess(x)
        if on_cuda:
            x = x.contiguous(memory_format=torch.channels_last)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=on_cuda):
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


def _commit_shard(cache, s, st, entries, shard_keys, shard_parts, ids, dtype, envelope) -> None:
    """Write every missing (condition, depth) entry of shard ``s`` (rows in requested order)."""
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
