"""Throughput of the extraction engine vs a naive per-image loop, side by side in one run.

The engine decodes each image once to the run's working size W, applies every condition to
that W x W image in the same worker pass, lets the encoder's own preprocessing resize the
degraded images to its input and encodes in batches (channels-last for convolutional encoders
on CPU, forward chunks sized for the CPU caches; bf16 autocast on CUDA). The naive loop does
the same correct thing the way most probe scripts would: the encoder as its builder returns
it, then for each condition, for each image, open and decode the file again to W, perturb it
at W, run the encoder's preprocessing on it and the encoder on that single image. Both use the
same decode policy, working size, perturbations, weights and images and give the same
features (checked). "img/s" counts encoded images (image x condition).

W defaults to what a run of this one encoder uses (``max(224, input size)``, 224 for
EfficientNet-Lite0); ``--working-size 448`` measures a run whose panel also holds a 448-px
encoder (the perturbations then cost about 4x more pixels).

The source images copy the file formats of the protocol's datasets (synthetic pixels):

* ``isic``  -- ISIC 2019 dermoscopy: RGB JPEG, 1024 x 768;
* ``aptos`` -- APTOS 2019 fundus: RGB PNG, 2048 x 1536 (the originals are 1-3 kpx PNGs);
* ``cxr``   -- CheXpert / MIMIC-CXR chest X-ray: grayscale JPEG, 2048 x 2500.

Two more columns separate the gains: the naive loop on a channels-last module (what memory
format buys) and the engine in the other precision (bf16 autocast when the engine's precision
resolves to fp32, as ``auto`` does on CPU; fp32 on CUDA). Feature agreement with the fp32
naive loop is printed as the largest relative difference and the smallest per-row cosine.

Usage::

    python benchmarks/extraction.py                    # 32 images x 16 conditions per source
    python benchmarks/extraction.py --sources aptos    # one source
    python benchmarks/extraction.py --quick            # smoke test

    python benchmarks/extraction.py --true-size vit_b16,resnet50 --true-size-images 8

Prints ``speedup=<ratio>`` (all sources: naive seconds / engine seconds) first, then
``name=value`` lines. ``--true-size`` instead times the forward pass of registered encoders
built as a dry run builds them (``crsbench run --dry-run``: real architecture at real size,
seeded random weights, no download) and prints ``true_size_<encoder>_img_s`` and
``..._peak_mib`` (CUDA: peak allocated; CPU: peak resident memory of the process). With CUDA it also reports bf16 autocast throughput of timm
``vit_base_patch16_224`` and ``resnet50`` (random init).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

#: name -> (format, width, height, grayscale)
SOURCES: dict[str, tuple[str, int, int, bool]] = {
    "isic": ("JPEG", 1024, 768, False),
    "aptos": ("PNG", 2048, 1536, False),
    "cxr": ("JPEG", 2048, 2500, True),
}


def write_images(root: Path, n: int, source: str, scale: float = 1.0) -> tuple[list, list]:
    """``n`` textured images in the source's format; returns (ids, paths)."""
    from PIL import Image

    fmt, w, h, gray = SOURCES[source]
    w, h = max(64, int(w * scale)), max(64, int(h * scale))
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    root.mkdir(parents=True, exist_ok=True)
    ids, paths = [], []
    for i in range(n):
        f = rng.uniform(0.002, 0.02, size=3).astype(np.float32)
        chans = 1 if gray else 3
        base = np.stack([np.sin(xx * f[c] + yy * f[(c + 1) % 3] + i) for c in range(chans)], -1)
        noise = rng.normal(0, 10, base.shape).astype(np.float32)
        img = (127 + 90 * base + noise).clip(0, 255).astype(np.uint8)
        im = Image.fromarray(img[..., 0] if gray else img)
        p = root / f"{source}_{i:05d}.{'png' if fmt == 'PNG' else 'jpg'}"
        im.save(p, **({"quality": 90} if fmt == "JPEG" else {"compress_level": 6}))
        ids.append(f"{source}{i:05d}")
        paths.append(str(p))
    return ids, paths


def _build(name: str | None, input_size: int | None):
    from crsbench.encoders import build

    if not name:
        try:
            enc = build("efficientnet_lite0_imagenet")
        except Exception:  # weights package missing: fall back to the random CNN
            enc = build("random_cnn")
    else:
        enc = build(name)
    return enc.set_input_size(input_size) if input_size else enc


def naive_loop(encoder, ids, paths, conditions, size, channels_last: bool = False) -> dict:
    """Per condition, per image: decode again to the working size ``size``, perturb at it,
    the encoder's preprocessing (resize to its input), forward one image."""
    import torch

    from crsbench import perturb
    from crsbench.features.decode import decode_image, to_rgb_chw

    if channels_last:
        encoder.module.to(memory_format=torch.channels_last)
    out = {}
    with torch.inference_mode():
        for name, sev in conditions:
            rows = []
            for i, p in zip(ids, paths, strict=True):
                img = decode_image(p, size)
                if name != "clean":
                    img = perturb.apply(img, name, sev, i)
                x = encoder.preprocess(torch.from_numpy(to_rgb_chw(img))[None])
                if channels_last:
                    x = x.contiguous(memory_format=torch.channels_last)
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


def run_source(args, source: str, conds: list, root: Path) -> dict:
    """Engine, naive loop and channels-last naive loop over one source's images."""
    from crsbench.features import ExtractSettings, FeatureCache, extract
    from crsbench.features.engine import resolve_precision
    from crsbench.features.resolution import working_size

    ids, paths = write_images(root / source, args.n_images, source, args.scale)
    engine_enc = _build(args.encoder, args.input_size)
    size = working_size([int(engine_enc.input_size)], args.working_size)
    t = time.perf_counter()
    settings = ExtractSettings(working_size=size, conditions=conds, batch_size=args.batch_size,
                               num_workers=args.workers, progress=False,
                               precision=args.precision)  # fmt: skip
    res = extract(engine_enc, ids, paths, cache=FeatureCache(root / f"cache_{source}"),
                  dataset_revision="bench", settings=settings)  # fmt: skip
    t_engine = time.perf_counter() - t
    precision = resolve_precision(args.precision, engine_enc.device.type == "cuda")
    alt = "bf16" if precision == "fp32" else "fp32"  # the engine again in the other precision
    enc_alt = _build(args.encoder, args.input_size)
    t = time.perf_counter()
    res_alt = extract(enc_alt, ids, paths, cache=FeatureCache(root / f"cache_alt_{source}"),
                      dataset_revision="bench", settings=replace(settings, precision=alt))  # fmt: skip
    t_alt = time.perf_counter() - t
    fresh = _build(args.encoder, args.input_size)  # as the builder returns it
    t = time.perf_counter()
    naive = naive_loop(fresh, ids, paths, conds, size)
    t_naive = time.perf_counter() - t
    t = time.perf_counter()
    naive_loop(fresh, ids, paths, conds, size, channels_last=True)
    t_naive_cl = time.perf_counter() - t

    def rel(r):  # largest |engine - naive| relative to the largest |naive| feature
        return max(float(np.abs(np.asarray(r[(c, 1.0)].features) - naive[c]).max()
                         / np.abs(naive[c]).max()) for c in conds)  # fmt: skip

    def cos(r):  # smallest per-row cosine similarity of engine and naive features
        out = 1.0
        for c in conds:
            a, b = np.asarray(r[(c, 1.0)].features, np.float64), naive[c].astype(np.float64)
            num = (a * b).sum(1)
            den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
            out = min(out, float((num / np.maximum(den, 1e-30)).min()))
        return out

    return {"engine": t_engine, "alt": t_alt, "naive": t_naive, "naive_cl": t_naive_cl,
            "rel": rel(res), "rel_alt": rel(res_alt), "cos": cos(res), "cos_alt": cos(res_alt),
            "size": int(engine_enc.input_size), "working_size": size, "name": engine_enc.card.name, "precision": precision,
            "alt_precision": alt}  # fmt: skip


def true_size(names: list[str], n_images: int, batch_size: int) -> None:
    """Forward img/s and peak memory of each encoder at true size with random weights."""
    import torch

    from crsbench.encoders import build
    from crsbench.features.runner import forward_chunk
    from crsbench.runs.dryrun import encoder_throughput

    device = "cuda" if torch.cuda.is_available() else "cpu"
    for name in names:
        enc = build(name, pretrained=False, device=device)
        chunk = forward_chunk(batch_size, enc.input_size, device == "cuda")
        t = encoder_throughput(enc, n_images, chunk)
        print(f"true_size_{name}_img_s={t.img_per_s:.2f}", flush=True)
        print(f"true_size_{name}_params_m={t.params_m:.1f}")
        print(f"true_size_{name}_input_size={t.input_size}")
        print(f"true_size_{name}_peak_mib={t.peak_mem_mb:.0f} ({t.memory_kind})")
        del enc
    print(f"device={device}")
    print(f"torch_threads={torch.get_num_threads()}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="4 images x 4 conditions, small files")
    ap.add_argument(
        "--encoder", default=None, help="registered encoder (default: EfficientNet-Lite0)"
    )
    ap.add_argument("--input-size", type=int, default=None, help="override the card's size")
    ap.add_argument("--working-size", type=int, default=None,
                    help="the run's working size W (default: max(224, input size))")  # fmt: skip
    ap.add_argument(
        "--sources", default=",".join(SOURCES), help="comma list of " + str(list(SOURCES))
    )
    ap.add_argument("--n-images", type=int, default=32, help="images per source")
    ap.add_argument("--scale", type=float, default=1.0, help="scale the source image sides")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--workers", type=int, default=None, help="decode workers (engine default)")
    ap.add_argument("--precision", default="auto", choices=("auto", "fp32", "bf16"),
                    help="engine precision (an unchecked auto is fp32 in the engine)")  # fmt: skip
    ap.add_argument("--true-size", default=None,
                    help="comma list of encoders to time at true size with random weights")  # fmt: skip
    ap.add_argument("--true-size-images", type=int, default=8, help="images timed per encoder")
    args = ap.parse_args(argv)
    if args.true_size:
        names = [n.strip() for n in args.true_size.split(",") if n.strip()]
        true_size(names, args.true_size_images, args.batch_size)
        return 0

    import torch

    from crsbench import perturb

    conds = [("clean", 0), *perturb.PAPER_CONDITIONS]
    if args.quick:
        args.n_images, args.scale, conds = 4, 0.25, conds[:4]
    sources = [s.strip() for s in args.sources.split(",") if s.strip()]
    unknown = [s for s in sources if s not in SOURCES]
    if unknown:
        ap.error(f"unknown sources {unknown}; choose from {list(SOURCES)}")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for source in sources:
            r = run_source(args, source, conds, Path(tmp))
            results[source] = r
            n = args.n_images * len(conds)
            print(
                f"{source}: engine {n / r['engine']:.1f} img/s, naive {n / r['naive']:.1f} img/s "
                f"(channels-last naive {n / r['naive_cl']:.1f}), speedup {r['naive'] / r['engine']:.2f}x",
                flush=True,
            )
    t_engine = sum(r["engine"] for r in results.values())
    t_naive = sum(r["naive"] for r in results.values())
    t_cl = sum(r["naive_cl"] for r in results.values())
    forwards = args.n_images * len(conds) * len(results)
    first = next(iter(results.values()))
    t_alt = sum(r["alt"] for r in results.values())
    alt = first["alt_precision"]
    print(f"speedup={t_naive / t_engine:.2f}")
    print(f"speedup_vs_channels_last_naive={t_cl / t_engine:.2f}")
    print(f"speedup_{alt}_engine={t_naive / t_alt:.2f}")
    print(f"engine_precision={first['precision']}")
    print(f"engine_img_s={forwards / t_engine:.1f}")
    print(f"engine_{alt}_img_s={forwards / t_alt:.1f}")
    print(f"naive_img_s={forwards / t_naive:.1f}")
    print(f"naive_channels_last_img_s={forwards / t_cl:.1f}")
    for source, r in results.items():
        print(f"{source}_speedup={r['naive'] / r['engine']:.2f}")
    print(f"n_images_per_source={args.n_images}")
    print(f"n_conditions={len(conds)}")
    print(f"encoder={first['name']}")
    print(f"input_size={first['size']}")
    print(f"working_size={first['working_size']}")
    print(f"torch_threads={torch.get_num_threads()}")
    print(f"max_rel_feature_diff={max(r['rel'] for r in results.values()):.2e}")
    print(f"min_row_cosine={min(r['cos'] for r in results.values()):.6f}")
    print(f"max_rel_feature_diff_{alt}_engine={max(r['rel_alt'] for r in results.values()):.2e}")
    print(f"min_row_cosine_{alt}_engine={min(r['cos_alt'] for r in results.values()):.6f}")
    if torch.cuda.is_available():
        print(f"gpu={torch.cuda.get_device_name(0)}")
        for name in ("vit_base_patch16_224", "resnet50"):
            print(f"gpu_bf16_{name}_img_s={gpu_throughput(name):.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
