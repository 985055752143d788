"""A dry run at true size: the real architectures, seeded random weights, a sample of the data.

Before downloading tens of gigabytes of weights a user can run the whole pipeline with every
encoder's real architecture at its real size (``weights: random``), on a small sample of each
dataset (``max_images``), and read each encoder's throughput and peak memory on this machine.
The records say so in provenance (see :mod:`crsbench.core.random_weights`).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crsbench.config import BenchmarkConfig

#: Images per dataset of ``crsbench run --dry-run`` unless ``--dry-run-images`` says otherwise.
DRY_RUN_IMAGES = 64
#: Suffix of the dry run's default output folder (next to the config's ``output_dir``, so the
#: real run's store is never touched).
DRY_RUN_SUFFIX = "-dry-run"


def dry_run_config(
    cfg: BenchmarkConfig, n_images: int = DRY_RUN_IMAGES, out: Path | None = None
) -> BenchmarkConfig:
    """``cfg`` as a dry run: random weights, ``n_images`` per dataset, a cheap LoRA budget.

    Every encoder gets ``weights: random``; every dataset a ``max_images`` cap of at most
    ``n_images``; the LoRA regime (when enabled) one epoch, one learning rate and one seed;
    the output folder is ``out`` or ``<output_dir>-dry-run``. The result goes through the
    config validators again.
    """
    data = cfg.model_dump()
    for enc in data["encoders"]:
        enc["weights"] = "random"
    for ds in data["datasets"].values():
        cap = ds.get("max_images")
        ds["max_images"] = n_images if cap is None else min(int(cap), n_images)
    lora = data["regimes"]["lora"]
    lora.update(epochs=1, lr_factors=[1.0], seeds=lora["seeds"][:1])
    data["output_dir"] = out or Path(f"{cfg.output_dir}{DRY_RUN_SUFFIX}")
    return BenchmarkConfig.model_validate(data)


@dataclass(frozen=True)
class Throughput:
    """Forward-pass throughput and memory of one encoder build on this machine."""

    encoder: str
    input_size: int
    params_m: float
    img_per_s: float
    peak_mem_mb: float
    memory_kind: str

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return dict(self.__dict__)


def _rss_mb() -> float:
    """Resident set size of this process in MiB (Linux ``/proc/self/statm``; 0 elsewhere)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return 0.0
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


class _PeakRss:
    """Samples the process RSS every few milliseconds while active; ``peak`` in MiB."""

    def __init__(self, every_s: float = 0.005) -> None:
        self.every_s, self.peak = every_s, _rss_mb()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            self.peak = max(self.peak, _rss_mb())

    def __enter__(self) -> _PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss_mb())


def encoder_throughput(encoder: Any, n_images: int = 8, batch_size: int = 8) -> Throughput:
    """Time ``n_images`` preprocessed random images through ``encoder`` (one warm-up batch),
    as the extraction runs them: channels-last where it uses it, and on CPU the passes side by
    side in its forward threads (:mod:`crsbench.features.forward_threads`).

    Parameters
    ----------
    encoder : crsbench.encoders.Encoder
        A built encoder (random or real weights; the speed is the same).
    n_images, batch_size : int
        Images timed (at least one pass per forward thread), and images per forward pass.

    Returns
    -------
    Throughput
        ``img_per_s`` over the timed passes (depth 1.0 only); ``peak_mem_mb``: on CUDA the
        peak allocated by torch during the passes, on CPU the peak resident memory of the
        process during the passes (``memory_kind`` says which).
    """
    import torch

    from crsbench.features.engine import use_channels_last
    from crsbench.features.forward_threads import (
        ForwardThreads,
        cap_torch_threads,
        forward_threads,
        in_order,
    )

    size = int(encoder.input_size)
    cuda = str(encoder.device).startswith("cuda")
    cap_torch_threads(torch, cuda)  # as the extraction
    threads = forward_threads(torch.get_num_threads(), cuda, encoder.concurrent_forwards)
    batch = min(batch_size, n_images)
    n_images = max(n_images, threads * batch)
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(batch, 3, size, size, generator=gen).to(encoder.device)
    if use_channels_last(encoder, cuda):
        encoder.module.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    params = sum(p.numel() for p in encoder.module.parameters()) / 1e6
    passes = [min(batch, n_images - i) for i in range(0, n_images, batch)]
    with ForwardThreads(torch, threads) as forwards:
        # warm-up, a pass per thread at its thread count: allocator, kernels, lazy init
        for _ in in_order(forwards, encoder.forward_features, [(x,)] * threads):
            pass
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        with _PeakRss() as rss:
            t0 = time.perf_counter()
            for _ in in_order(forwards, encoder.forward_features, ((x[:k],) for k in passes)):
                pass
            if cuda:
                torch.cuda.synchronize()
            seconds = time.perf_counter() - t0
    peak = torch.cuda.max_memory_allocated() / 2**20 if cuda else rss.peak
    return Throughput(
        encoder=encoder.card.name,
        input_size=size,
        params_m=round(params, 2),
        img_per_s=n_images / seconds,
        peak_mem_mb=round(peak, 1),
        memory_kind="cuda_allocated" if cuda else "process_rss",
    )


def dry_run_throughputs(
    cfg: BenchmarkConfig, n_images: int = 8, names: Sequence[str] | None = None
) -> list[Throughput]:
    """:func:`encoder_throughput` of every encoder of ``cfg`` (or of ``names`` only), built as
    the run builds it and fed forward passes of the run's size
    (:func:`crsbench.features.runner.forward_chunk`)."""
    from crsbench.features.runner import forward_chunk
    from crsbench.runs.extract_cell import get_encoder
    from crsbench.runs.extraction import RunExtraction

    extraction, out = RunExtraction.from_config(cfg), []
    for e in cfg.encoders:
        if names is not None and e.name not in names:
            continue
        enc = get_encoder(extraction, e.name)
        chunk = forward_chunk(cfg.batch_size, enc.input_size, str(enc.device).startswith("cuda"))
        out.append(encoder_throughput(enc, n_images, chunk))
    return out
