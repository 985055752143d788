"""Memory of a store's predictions held compact (as stored) vs decoded to float64, side by side.

``analyze`` reads every complete cell's per-sample predictions once and keeps them for the
bootstrap and the prediction analyses. Held compact (``load_store_predictions(...,
compact=True)``: read-only views of the stored float32 bytes) they take half the memory of the
float64 copies the earlier reader made, and every analysis widens one cell at a time. This
script writes a paper-plan store at ``--scale`` (or reads ``--store``), then loads every cell's
predictions in a fresh process per mode, alternating the modes ``--runs`` times, and prints
for each load the bytes of the probability arrays held, how much the process's RSS grew by the
load and stays grown (what it holds while the analyses run, and what forked workers share),
and its peak growth during the load (the store's bytes being read, the same in both modes)::

    python benchmarks/prediction_memory.py [--scale 1/16] [--runs 3] [--store DIR]

Last line: ``memory_ratio=<median float64 held growth / median compact held growth>``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from fractions import Fraction
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODES = ("compact", "float64")

_CHILD = """
import json, resource, sys
from crsbench.stats.store_predictions import load_store_predictions
from crsbench.store.prediction_reader import read_main_predictions

def rss_kib():
    with open("/proc/self/status") as f:
        return int(next(l for l in f if l.startswith("VmRSS")).split()[1])

store, mode = sys.argv[1], sys.argv[2]
rows = read_main_predictions(store)["rows"]
cells = sorted(set(zip(rows["encoder"], rows["dataset"])))
seeds = sorted(int(s) for s in rows["seed"].unique())
del rows
before = rss_kib()
found = load_store_predictions(store, cells, seeds, compact=mode == "compact")
held = {}
for cell in found.cells.values():
    held.update({id(a): a.nbytes for a in cell.probability_arrays()})
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"mode": mode, "cells": len(found.cells), "held_mib": sum(held.values()) / 2**20,
                  "peak_growth_mib": (peak - before) / 1024,
                  "held_growth_mib": (rss_kib() - before) / 1024}))
"""


def load_once(store: Path, mode: str) -> dict:
    """One fresh process that loads every cell's predictions in ``mode``; its figures."""
    out = subprocess.run([sys.executable, "-c", _CHILD, str(store), mode], check=True,
                         capture_output=True, text=True)  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def write_store(store: Path, scale: float, encoders: int) -> None:
    """The paper plan's store at ``scale`` through the real writer (``paper_scale.py``)."""
    subprocess.run([sys.executable, str(HERE / "paper_scale.py"), "--write-store", str(store),
                    "--scale", str(scale), "--encoders", str(encoders)],
                   check=True, capture_output=True)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=lambda s: float(Fraction(s)), default=1 / 16,
                    help="Test-set size factor of the store written (default 1/16).")  # fmt: skip
    ap.add_argument("--encoders", type=int, default=15, help="First N encoders of the panel.")
    ap.add_argument("--runs", type=int, default=3, help="Loads per mode, alternating.")
    ap.add_argument("--store", type=Path, help="Read this store instead of writing one.")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="crsbench-prediction-memory-") as tmp:
        store = args.store
        if store is None:
            store = Path(tmp) / "store"
            write_store(store, args.scale, args.encoders)
        growth: dict[str, list[float]] = {m: [] for m in MODES}
        for run in range(args.runs):
            for mode in MODES if run % 2 == 0 else MODES[::-1]:
                r = load_once(store, mode)
                growth[mode].append(r["held_growth_mib"])
                print(f"run {run + 1} {mode}: cells {r['cells']}, arrays held "
                      f"{r['held_mib']:.3f} MiB, RSS grown by the load {r['held_growth_mib']:.1f} "
                      f"MiB (peak during it {r['peak_growth_mib']:.1f} MiB)", flush=True)  # fmt: skip
    med = {m: statistics.median(v) for m, v in growth.items()}
    runs = " ".join(f"{m}_runs=" + ",".join(f"{x:.1f}" for x in v) for m, v in growth.items())
    print(f"compact_mib={med['compact']:.1f} float64_mib={med['float64']:.1f} {runs}")
    ratio = med["float64"] / med["compact"] if med["compact"] > 0 else float("nan")
    print(f"memory_ratio={ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
