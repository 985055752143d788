"""How far the golden run's metrics move when the numeric kernels change (other CPUs).

The golden test (``tests/integration/test_store_golden.py``) compares a run of a pinned config
with a CSV written on one machine. Another CPU runs other kernels: OpenBLAS picks its kernel by
CPU (Haswell, SkylakeX, Zen, ...), torch its vector width (AVX-512, AVX2, none), numpy its SIMD
loops, and the thread count changes how reductions are split. This script reruns the pinned
config once per kernel setting this machine can select, in a fresh process each, and prints the
largest relative difference per metric against the golden of the same kernels (``same``) and
against the reference golden written on the default kernels here (``cross``)::

    python benchmarks/golden_kernels.py [--variants default,avx2_host,...] [--write]

``--write`` (for a change meant to move numbers, said in its commit) writes one golden per
kernel fingerprint met and the index ``kernels.json``. Last line:
``same_kernel_max=<...> same_kernel_rtol=<...> cross_kernel_max=<...> cross_kernel_rtol=<...>``;
exit 1 unless each maximum is at most its tolerance divided by 3.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "integration" / "golden" / "runs_pinned.csv"
#: The kernels the reference golden (``runs_pinned.csv``) was written under.
REFERENCE_FINGERPRINT = "openblas=SkylakeX,numpy=AVX512_ICL"
_NO_AVX512_NUMPY = "X86_V4 AVX512_ICL AVX512_SPR"

#: Kernel settings, each as the environment of a fresh process (``taskset`` where a CPU list is
#: given). Names say which host each one stands for.
VARIANTS: dict[str, dict[str, str]] = {
    "default": {},
    "avx2_host": {
        "OPENBLAS_CORETYPE": "Haswell",
        "ATEN_CPU_CAPABILITY": "avx2",
        "NPY_DISABLE_CPU_FEATURES": _NO_AVX512_NUMPY,
    },
    "zen_host": {"OPENBLAS_CORETYPE": "Zen", "NPY_DISABLE_CPU_FEATURES": _NO_AVX512_NUMPY},
    "blas_haswell": {"OPENBLAS_CORETYPE": "Haswell"},
    "torch_avx2": {"ATEN_CPU_CAPABILITY": "avx2"},
    "numpy_no_avx512": {"NPY_DISABLE_CPU_FEATURES": _NO_AVX512_NUMPY},
    "old_host": {
        "OPENBLAS_CORETYPE": "Sandybridge",
        "ATEN_CPU_CAPABILITY": "default",
        "NPY_DISABLE_CPU_FEATURES": f"X86_V3 {_NO_AVX512_NUMPY}",
    },
    "one_thread": {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "TASKSET": "0"},
}

_CHILD = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from golden.kernels import kernel_fingerprint
from golden.pinned_config import pinned_config
from crsbench.config import parse_config
from crsbench.runs.pipeline import RunOptions, run_benchmark
data, out = Path(sys.argv[1]), Path(sys.argv[2])
run_benchmark(parse_config(pinned_config(data, out), base_dir=out.parent), RunOptions(progress=False))
print(kernel_fingerprint())
"""


def _compare_module() -> ModuleType:
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # the script's own folder
    import compare_stores

    return compare_stores


def _write_data(root: Path) -> Path:
    sys.path.insert(0, str(ROOT / "tests" / "integration"))
    from runner_fixtures import write_tiny_data

    return write_tiny_data(root)


def run_variant(name: str, data: Path, out: Path) -> tuple[float, str]:
    """Run the pinned config in a fresh process under variant ``name``; its wall seconds and
    kernel fingerprint."""
    settings = dict(VARIANTS[name])
    cpus = settings.pop("TASKSET", None)
    env = {**os.environ, **settings}
    for key in ("OPENBLAS_CORETYPE", "ATEN_CPU_CAPABILITY", "NPY_DISABLE_CPU_FEATURES"):
        if key not in settings:
            env.pop(key, None)  # the default variant runs what this CPU picks
    cmd = [sys.executable, "-c", _CHILD, str(data), str(out), str(ROOT / "tests" / "integration")]
    if cpus is not None:
        cmd = ["taskset", "-c", cpus, *cmd]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
    return time.perf_counter() - t0, proc.stdout.strip().splitlines()[-1]


def _golden_name(fingerprint: str) -> str:
    if fingerprint == REFERENCE_FINGERPRINT:
        return "runs_pinned.csv"
    slug = fingerprint.replace("openblas=", "").replace(",numpy=", "-").lower()
    return f"runs_pinned.{slug}.csv"


def write_goldens(stores: dict[str, Path], compare: ModuleType) -> None:
    """One golden CSV per fingerprint (the first store met with it) and the index."""
    index: dict[str, str] = {}
    for fingerprint, store in stores.items():
        index[fingerprint] = _golden_name(fingerprint)
        compare.write_csv(compare.load_runs(store), GOLDEN.parent / index[fingerprint])
    (GOLDEN.parent / "kernels.json").write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")
    print(f"wrote {len(index)} goldens and kernels.json")


def _golden_kernels() -> ModuleType:
    sys.path.insert(0, str(ROOT / "tests" / "integration"))
    from golden import kernels

    return kernels


def main(argv: list[str] | None = None) -> int:
    """Rerun the golden config under each variant; print the spreads against the goldens."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated names")
    parser.add_argument("--write", action="store_true", help="write a golden per fingerprint")
    args = parser.parse_args(argv)
    compare, kernels = _compare_module(), _golden_kernels()
    reference = compare.load_runs(GOLDEN)
    same_max = cross_max = 0.0
    stores: dict[str, Path] = {}
    with tempfile.TemporaryDirectory(prefix="golden-kernels-") as tmp:
        data = _write_data(Path(tmp) / "data")
        print(
            f"{'variant':16s} {'seconds':>7s} {'vs':5s} "
            + " ".join(f"{m:>14s}" for m in compare.METRICS)
            + "  fingerprint"
        )
        for name in args.variants.split(","):
            out = Path(tmp) / name
            seconds, fingerprint = run_variant(name, data, out)
            stores.setdefault(fingerprint, out)
            got = compare.load_runs(out)
            rows = [x for x in compare.differences(reference, got) if not x.startswith("metrics")]
            assert not rows, f"{name}: identity columns differ: {rows[:3]}"
            own = kernels.golden_for(fingerprint)
            for label, want in (("same", own), ("cross", GOLDEN)):
                if want is None or not want.is_file():
                    print(f"{name:16s} {seconds:7.1f} {label:5s} (no golden for {fingerprint})")
                    continue
                diffs = compare.max_relative_differences(compare.load_runs(want), got)
                worst = max(diffs.values())
                if label == "same":
                    same_max = max(same_max, worst)
                else:
                    cross_max = max(cross_max, worst)
                cells = " ".join(f"{diffs[m]:14.3g}" for m in compare.METRICS)
                print(f"{name:16s} {seconds:7.1f} {label:5s} {cells}  {fingerprint}", flush=True)
        if args.write:
            write_goldens(stores, compare)
    same_tol, cross_tol = kernels.SAME_KERNEL_RTOL, kernels.CROSS_KERNEL_RTOL
    print(
        f"same_kernel_max={same_max:.3g} same_kernel_rtol={same_tol:g} "
        f"cross_kernel_max={cross_max:.3g} cross_kernel_rtol={cross_tol:g}"
    )
    return 0 if same_max <= same_tol / 3 and cross_max <= cross_tol / 3 else 1


if __name__ == "__main__":
    sys.exit(main())
