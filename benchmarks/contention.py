"""crsbench beside other work: a small extraction + probe + LoRA run alone and beside competitors.

Competitors are started and stopped by this script: ``k`` busy CPU processes (k = 1, 2, 4) and a
disk-heavy writer (16 MiB sequential writes with an fsync every 64 MiB, like a package install
unpacking wheels). Each loaded run is paired with a quiet run just before it (the machine is
shared: pairs cancel slow drifts), and for each competitor the script prints the median of the
pairs' ratios (loaded / quiet) beside the fair-share ratio: ``(C + k) / C`` on ``C`` usable cores
for ``k`` busy processes, ``(C + d) / C`` for the writer, ``d`` the cores it used itself::

    python benchmarks/contention.py [--repeat 3] [--competitors busy1,busy2,busy4,writer]
                                    [--variant no_fsync]

``--variant no_fsync`` runs the same workload with ``os.fsync`` made a no-op in its process (a
diagnosis: how much of a slowdown the fsyncs explain); ``--variant spin`` runs it without the
command line's OpenMP wait policy (idle OpenMP threads spin, as before crsbench set one). Last line:
``contention_ratio=<worst (loaded / quiet) / fair-share>`` (goal <= 1.3).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

#: Synthetic images per dataset (and their side in pixels) of the workload.
WORKLOAD_SIZES = {"isic2019": 240, "aptos2019": 160, "side": 96}
_STAGE = re.compile(r"^\s+(\w+)\s+([0-9.]+) s$")
_BUSY = "while True:\n    pass\n"
_WRITER = """
import os, sys, time
path, block = sys.argv[1], os.urandom(16 * 2**20)
with open(path, "wb") as f:
    written = 0
    while True:
        f.write(block); written += len(block)
        if written % (64 * 2**20) == 0:
            f.flush(); os.fsync(f.fileno())
        if written >= 2 * 2**30:
            f.seek(0); f.truncate(); written = 0
"""
_NO_FSYNC = (
    "import os, sys; os.fsync = lambda fd: None; from crsbench.cli import main; sys.exit(main())"
)
#: The command line without its OpenMP wait policy (how crsbench ran before it set one).
_SPIN = "import sys; from crsbench.cli import app; sys.exit(app())"


def usable_cores() -> int:
    """Cores this process may run on (its affinity), not the machine's count."""
    return len(os.sched_getaffinity(0))


def workload_config(data: Path, out: Path) -> dict:
    """Random-CNN and pixel extraction on ISIC and APTOS, all probes, LoRA of the random CNN
    on APTOS: about 40 s alone on 2 quiet cores."""
    return {
        "encoders": [{"name": "random_cnn", "input_size": 64}, {"name": "pixel"}],
        "datasets": {
            "isic2019": {"root": str(data / "isic2019")},
            "aptos2019": {"root": str(data / "aptos2019")},
        },  # fmt: skip
        "shifts": [],
        "seeds": [0, 1],
        "fractions": [0.1, 1.0],
        "perturbations": {
            "names": ["gaussian_blur", "jpeg", "contrast"],
            "severities": [1, 3],
            "include_extra": False,
            "working_size": 64,
        },  # fmt: skip
        "probes": {
            "logistic": {"max_iter": 200},
            "mlp": {"hidden_size": 32, "epochs": 20},
            "knn": {"k": 5},
        },  # fmt: skip
        "recalibrators": ["temperature"],
        "layers": [0.5, 1.0],
        "regimes": {
            "lora": {
                "enabled": True,
                "encoders": ["random_cnn"],
                "datasets": ["aptos2019"],
                "epochs": 1,
                "lr_factors": [1.0],
                "seeds": [0],
                "fractions": [1.0],
            }
        },  # fmt: skip
        "output_dir": str(out),
        "device": "cpu",
        "num_workers": 0,
        "batch_size": 64,
    }


def run_workload(data: Path, work: Path, variant: str) -> dict[str, float]:
    """One fresh run (new output folder and feature cache); its wall and stage seconds."""
    out = Path(tempfile.mkdtemp(dir=work, prefix="run-"))
    config = out / "grid.yaml"
    config.write_text(yaml.safe_dump(workload_config(data, out / "out")))
    head = {"no_fsync": ["-c", _NO_FSYNC], "spin": ["-c", _SPIN]}.get(
        variant, ["-m", "crsbench.cli"]
    )
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, *head, "run", str(config)], capture_output=True,
                          text=True, check=False)  # fmt: skip
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"the workload failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    stages = {m.group(1): float(m.group(2)) for line in proc.stdout.splitlines()
              if (m := _STAGE.match(line))}  # fmt: skip
    subprocess.run(["rm", "-rf", str(out)], check=True)
    return {"wall": wall, **stages}


def _orphan_guard() -> str:
    """Code that makes a competitor die with this script (a killed benchmark leaves none)."""
    return f"from crsbench.core.workers import die_with_parent; die_with_parent({os.getpid()})\n"


def start_competitor(name: str, work: Path) -> list[subprocess.Popen[bytes]]:
    """Start competitor ``name`` (``busyK`` or ``writer``); its processes."""
    if name.startswith("busy"):
        code = _orphan_guard() + _BUSY
        return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(int(name[4:]))]
    if name == "writer":
        code = _orphan_guard() + _WRITER
        return [subprocess.Popen([sys.executable, "-c", code, str(work / "writer.bin")])]
    raise SystemExit(f"unknown competitor {name!r}: busy1, busy2, busy4 or writer")


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of ``pids`` so far."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def loaded_run(name: str, data: Path, work: Path, variant: str) -> tuple[dict[str, float], float]:
    """The workload beside competitor ``name``; its times and the cores the competitor used."""
    procs = start_competitor(name, work)
    try:
        time.sleep(1.0)  # let the competitor reach its steady state
        c0, t0 = cpu_seconds([p.pid for p in procs]), time.perf_counter()
        times = run_workload(data, work, variant)
        used = (cpu_seconds([p.pid for p in procs]) - c0) / (time.perf_counter() - t0)
    finally:
        for p in procs:
            p.kill()
            p.wait()
        (work / "writer.bin").unlink(missing_ok=True)
    return times, used


def fair_share(name: str, cores: int, used: float) -> float:
    """The slowdown fair sharing of ``cores`` cores would give beside competitor ``name``."""
    demand = float(name[4:]) if name.startswith("busy") else used
    return (cores + demand) / cores


def main(argv: list[str] | None = None) -> int:
    """Run every competitor's pairs; print ratios, stage ratios and the contention ratio."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--competitors", default="busy1,busy2,busy4,writer")
    parser.add_argument("--variant", choices=("default", "no_fsync", "spin"), default="default")
    args = parser.parse_args(argv)
    cores = usable_cores()
    worst = 0.0
    with tempfile.TemporaryDirectory(prefix="crsbench-contention-", dir=os.getcwd()) as name:
        work = Path(name)
        from crsbench.datasets.synthetic import write_all

        data = work / "data"
        write_all(data, size=WORKLOAD_SIZES, seed=0, names=("isic2019", "aptos2019"))
        print(f"usable cores {cores}; variant {args.variant}; load average "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")  # fmt: skip
        print(
            f"{'competitor':10s} {'ratio':>6s} {'fair':>5s} {'ratio/fair':>10s}  "
            "runs (quiet s -> loaded s; extract, probes, lora ratios)"
        )
        for comp in args.competitors.split(","):
            ratios, cells = [], []
            fair = 0.0
            for _ in range(args.repeat):
                quiet = run_workload(data, work, args.variant)
                loaded, used = loaded_run(comp, data, work, args.variant)
                fair = fair_share(comp, cores, used)
                ratios.append(loaded["wall"] / quiet["wall"])
                stages = [loaded.get(s, 0) / max(quiet.get(s, 0), 1e-9) for s in
                          ("extract", "probes_and_metrics", "lora_adaptation")]  # fmt: skip
                cells.append(f"{quiet['wall']:.1f}->{loaded['wall']:.1f} "
                             f"({', '.join(f'{r:.2f}' for r in stages)})")  # fmt: skip
            ratio = statistics.median(ratios)
            worst = max(worst, ratio / fair)
            print(f"{comp:10s} {ratio:6.2f} {fair:5.2f} {ratio / fair:10.2f}  {'; '.join(cells)}",
                  flush=True)  # fmt: skip
    print(f"contention_ratio={worst:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
