"""Channels-last against contiguous input for the demo's CNN encoders on this CPU, side by side.

crsbench's :class:`~crsbench.encoders.base.Encoder` runs convolutional networks channels-last on
the CPU (:func:`crsbench.encoders.base.prefers_channels_last`: the input batch is made
channels-last, the weights stay as they are). This script measures each
model's throughput both ways in one process, alternating the two layouts run by run, and checks
the features agree::

    python benchmarks/channels_last.py [--runs 5] [--size 64] [--batch 64] [--threads N]

One line per model: every run's img/s for each layout, the medians, ``ratio`` (channels-last
over contiguous) and the largest absolute feature difference.
"""

from __future__ import annotations

import argparse
import statistics
import time

MODELS = (
    ("resnet18", {}),
    ("tf_efficientnet_lite0", {}),
    ("vit_tiny_patch16_224", {"dynamic_img_size": True}),
)


def images_per_s(model, x, reps: int) -> float:
    """Throughput of ``reps`` forward passes of batch ``x`` (after one warm-up pass)."""
    import torch

    with torch.inference_mode():
        model(x)
        t0 = time.perf_counter()
        for _ in range(reps):
            model(x)
    return reps * x.shape[0] / (time.perf_counter() - t0)


def compare(name: str, kwargs: dict, args: argparse.Namespace) -> str:
    """One model's line: runs, medians, ratio and feature difference."""
    import timm
    import torch

    torch.manual_seed(0)
    extra = {"img_size": args.size, **kwargs} if "vit" in name else {}
    plain = timm.create_model(name, pretrained=False, num_classes=0, **extra).eval()
    x = torch.randn(args.batch, 3, args.size, args.size)
    nhwc = plain  # the same module: only the input's layout differs (as in crsbench)
    x_cl = x.contiguous(memory_format=torch.channels_last)
    a, b = [], []
    for _ in range(args.runs):
        a.append(images_per_s(plain, x, args.reps))
        b.append(images_per_s(nhwc, x_cl, args.reps))
    with torch.inference_mode():
        diff = float((plain(x) - nhwc(x_cl)).abs().max())
    ma, mb = statistics.median(a), statistics.median(b)
    runs = " ".join(f"{u:.0f}/{v:.0f}" for u, v in zip(a, b, strict=True))
    return (f"{name}: runs(contiguous/channels_last img/s)={runs} median={ma:.0f}/{mb:.0f} "
            f"ratio={mb / ma:.2f} max_abs_feature_diff={diff:.2e}")  # fmt: skip


def main() -> None:
    """Print one line per model."""
    import torch

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--reps", type=int, default=5, help="forward passes per run")
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"batch {args.batch} at {args.size} px")  # fmt: skip
    for name, kwargs in MODELS:
        print(compare(name, kwargs, args), flush=True)


if __name__ == "__main__":
    main()
