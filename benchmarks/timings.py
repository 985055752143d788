"""Timings that used to be asserted by tests: label files at full size, the store, the preflight.

Tests check what these operations produce; how long they take depends on the host and on what
else runs beside them, so it is measured here, each operation ``--repeat`` times in one run,
and printed as the median with every run listed, beside the figure it was tuned for::

    python benchmarks/timings.py [--repeat 3] [--store-rows 50000]

Last line: ``worst_ratio=<largest median / reference over the operations>`` (below 1: every
operation at or under its reference on this machine and load).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

#: Reference seconds per operation (the old tests' budgets; CheXpert's is CPU seconds there).
REFERENCE_S: dict[str, float] = {
    "chexpert label file (223,414 rows)": 12.0,
    "nih_cxr14 label file (112,120 rows)": 10.0,
    "padchest label file (160,861 rows)": 10.0,
    "vindr_cxr label file (67,914 rows)": 10.0,
    "store: append rows": 20.0,
    "store: has_keys (1 in 5 rows)": 2.0,
    "store: aggregate (GROUP BY)": 5.0,
    "preflight of the paper config (15 families missing)": 5.0,
}


def _module(relative: str) -> ModuleType:
    path = ROOT / relative
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def label_file_timings(tmp: Path) -> dict[str, Callable[[], float]]:
    """One timer per full-size label file (written once, read on each call)."""
    from crsbench.datasets import load

    chexpert = _module("tests/unit/datasets/test_datasets_chexpert_adapter.py")
    shifts = _module("tests/unit/datasets/test_datasets_shift_load_speed.py")
    (tmp / "chexpert").mkdir()
    chexpert._write_big_chexpert(tmp / "chexpert", 223_414)
    timers = {"chexpert label file (223,414 rows)": ("chexpert", tmp / "chexpert")}
    for name, writer, rows in (
        ("nih_cxr14", shifts._nih, shifts.N_NIH),
        ("padchest", shifts._padchest, shifts.N_PADCHEST),
        ("vindr_cxr", shifts._vindr, shifts.N_VINDR_KAGGLE),
    ):
        (tmp / name).mkdir()
        writer(tmp / name, np.random.default_rng(0))
        timers[f"{name} label file ({rows:,} rows)"] = (name, tmp / name)
    return {
        label: (lambda n=n, r=r: _timed(lambda: load(n, r, check_files=False)))
        for label, (n, r) in timers.items()
    }


def store_timings(tmp: Path, rows: int) -> dict[str, list[float]]:
    """Append ``rows`` rows to a fresh store, look up one key in five, aggregate; once."""
    helpers = _module("tests/unit/store/store_helpers.py")
    from crsbench.store import GROUP_COLUMNS, ResultsStore

    frame = helpers.make_frame(rows, seed=1)
    folder = Path(tempfile.mkdtemp(dir=tmp, prefix="store-"))
    with ResultsStore(folder, helpers.HASH) as store:
        append = _timed(lambda: store.append_frame(frame))
        probe = sorted(store.done_keys())[::5]
        lookup = _timed(lambda: store.has_keys(probe))
        group = _timed(store.aggregate)
        assert store.aggregate() == frame.groupby(list(GROUP_COLUMNS)).ngroups
    return {
        "store: append rows": [append],
        "store: has_keys (1 in 5 rows)": [lookup],
        "store: aggregate (GROUP BY)": [group],
    }


def preflight_timer(tmp: Path) -> Callable[[], float]:
    """The preflight of the packaged paper config on tiny synthetic data, no weights."""
    fixtures = _module("tests/integration/runner_fixtures.py")
    from crsbench.config import load_config
    from crsbench.config.loading import packaged_config_path
    from crsbench.runs.preflight import preflight

    data = fixtures.write_tiny_data(tmp / "data", fixtures.MORE_SHIFT_TARGETS)
    os.environ.update(
        CRSBENCH_DATA=str(data),
        CRSBENCH_WEIGHTS_DIR=str(tmp / "weights"),
        HF_HUB_CACHE=str(tmp / "hf"),
        HF_HUB_OFFLINE="1",
    )
    cfg = load_config(packaged_config_path("paper"), output_dir=tmp / "out")
    return lambda: _timed(lambda: preflight(cfg))


def main(argv: list[str] | None = None) -> int:
    """Time every operation ``--repeat`` times; print medians, all runs and the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--store-rows", type=int, default=50_000)
    args = parser.parse_args(argv)
    runs: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="crsbench-timings-") as name:
        tmp = Path(name)
        timers = {**label_file_timings(tmp), "preflight of the paper config (15 families "
                  "missing)": preflight_timer(tmp)}  # fmt: skip
        for _ in range(args.repeat):
            for label, timer in timers.items():
                runs.setdefault(label, []).append(timer())
            for label, seconds in store_timings(tmp, args.store_rows).items():
                runs.setdefault(label, []).extend(seconds)
    print(
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; store rows {args.store_rows:,}"
    )
    print(f"{'operation':55s} {'median s':>9s} {'reference':>9s} {'ratio':>6s}  runs")
    worst = 0.0
    for label, seconds in runs.items():
        median = statistics.median(seconds)
        ratio = median / REFERENCE_S[label]
        worst = max(worst, ratio)
        listed = " ".join(f"{s:.2f}" for s in seconds)
        print(f"{label:55s} {median:9.2f} {REFERENCE_S[label]:9.1f} {ratio:6.2f}  {listed}")
    print(f"worst_ratio={worst:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
