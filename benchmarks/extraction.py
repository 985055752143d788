"""Throughput of the extraction engine vs a naive per-image loop, side by side in one run.

The engine decodes each image once, applies every condition in the same worker pass and
encodes in batches. The naive loop does what most probe scripts do: for each condition, for
each image, open and decode the file again, perturb it, preprocess it and run the encoder on
that single image. Both use the same decode policy, perturbations, encoder and images, and
produce the same features (checked). "img/s" counts encoded images (image x condition).

Usage::

    python benchmarks/extraction.py            # 16 images x 16 conditions
    python benchmarks/extraction.py --quick    # smoke test

Prints ``speedup=<ratio>`` first, then ``name=value`` lines. With CUDA it also reports bf16
autocast throughput of timm ``vit_base_patch16_224`` and ``resnet50`` (random init).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def _write_images(root: Path, n: int, side: int) -> tuple[list[str], list[str]]:
    from PIL import Image

    rng = np.random.default_rng(0)
    ids, paths = [], []
    yy, xx = np.mgrid[0:side, 0 : side * 4 // 3]
    for i in range(n):
        f = rng.uniform(0.005, 0.05, size=3)
        base = np.stack([np.sin(xx * f[c] + yy * f[(c + 1) % 3] + i) for c in range(3)], -1)
        img = (127 + 100 * base + rng.normal(0, 12, base.shape)).clip(0, 255).astype(np.uint8)
        p = root / f"img_{i:05d}.jpg"
        Image.fromarray(img).save(p, quality=90)
        ids.append(f"img{i:05d}")
        paths.append(str(p))
    return ids, paths


def _encoder(name: str | None):
    from crsbench.encoders import build

    if name:
        return build(name)
    try:
        return build("efficientnet_lite0_imagenet")
    except Exception:  # weights package missing: fall back to the random CNN
        return build("random_cnn")


def naive_loop(encoder, ids, paths, conditions, size) -> dict:
    """Per condition, per image: decode again, perturb, preprocess, forward one image."""
    import torch

    from crsbench import perturb
    from crsbench.features.decode import decode_image, to_rgb_chw

    out = {}
    with torch.inference_mode():
        for name, sev in conditions:
            rows = []
            for i, p in zip(ids, paths, strict=True):
                img = decode_image(p, size)
                if name != "clean":
                    img = perturb.apply(img, name, sev, i)
                x = encoder.preprocess(torch.from_numpy(to_rgb_chw(img))[None])
                rows.append(encoder.forward_features(x, (1.0,))[1.0].numpy()[0])
            out[(name, sev)] = np.stack(rows)
    return out


def gpu_throughput(model_name: str, batch: int = 256, iters: int = 20) -> float:
    """bf16-autocast, channels-last, inference-mode images/s of a random-init timm model."""
    import timm
    import torch

    model = timm.create_model(model_name, pretrained=False, num_classes=0).cuda().eval()
    model = model.to(memory_format=torch.channels_last)
    x = torch.randint(0, 256, (batch, 3, 224, 224), dtype=torch.uint8, device="cuda")
    mean = torch.tensor([0.485, 0.456, 0.406], device="cuda").view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device="cuda").view(1, 3, 1, 1) * 255
    with torch.inference_mode(), torch.autocast("cuda", dtype=torch.bfloat16):
        for _ in range(3):
            model(((x.float() - mean) / std).contiguous(memory_format=torch.channels_last))
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(iters):
            model(((x.float() - mean) / std).contiguous(memory_format=torch.channels_last))
        torch.cuda.synchronize()
    return batch * iters / (time.perf_counter() - t)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="8 images x 4 conditions")
    ap.add_argument(
        "--encoder", default=None, help="registered encoder (default: EfficientNet-Lite0)"
    )
    ap.add_argument("--n-images", type=int, default=16)
    ap.add_argument("--side", type=int, default=512, help="height of the synthetic JPEGs")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--workers", type=int, default=None)
    args = ap.parse_args(argv)

    import torch

    from crsbench import perturb
    from crsbench.features import FeatureCache, extract

    conds = [("clean", 0), *perturb.PAPER_CONDITIONS]
    n = args.n_images
    if args.quick:
        n, conds = 8, conds[:4]
    enc = _encoder(args.encoder)
    size = int(enc.input_size)
    with tempfile.TemporaryDirectory() as tmp:
        ids, paths = _write_images(Path(tmp), n, args.side)
        t = time.perf_counter()
        res = extract(
            enc,
            ids,
            paths,
            conditions=conds,
            cache=FeatureCache(Path(tmp) / "cache"),
            dataset_revision="bench",
            batch_size=args.batch_size,
            num_workers=args.workers,
            progress=False,
        )
        t_engine = time.perf_counter() - t
        t = time.perf_counter()
        naive = naive_loop(enc, ids, paths, conds, size)
        t_naive = time.perf_counter() - t
    max_diff = max(
        float(np.abs(np.asarray(res[(c, 1.0)].features) - naive[c]).max()) for c in conds
    )
    forwards = n * len(conds)
    print(f"speedup={t_naive / t_engine:.2f}")
    print(f"engine_img_s={forwards / t_engine:.1f}")
    print(f"naive_img_s={forwards / t_naive:.1f}")
    print(f"n_images={n}")
    print(f"n_conditions={len(conds)}")
    print(f"encoder={enc.card.name}")
    print(f"input_size={size}")
    print(f"torch_threads={torch.get_num_threads()}")
    print(f"max_abs_feature_diff={max_diff:.2e}")
    if torch.cuda.is_available():
        print(f"gpu={torch.cuda.get_device_name(0)}")
        for name in ("vit_base_patch16_224", "resnet50"):
            print(f"gpu_bf16_{name}_img_s={gpu_throughput(name):.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
