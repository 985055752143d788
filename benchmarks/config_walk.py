"""Follow the run config through a small `crsbench run`: which files it passes, how often.

Every call into crsbench's own code that receives a :class:`~crsbench.config.BenchmarkConfig`
among its arguments (``self`` aside) is recorded (``sys.setprofile``) as the file it enters. The walk is that
sequence of files with consecutive repeats folded; printed are the files and folders it
visits, the number of times it comes back to a file it had left ("returns"), and the file
entered most often. A small grid on synthetic ISIC data (pixel baseline, one seed, two
fractions, one perturbation), local executor, one process.

    python benchmarks/config_walk.py            # the walk's summary
    python benchmarks/config_walk.py --list     # and the walk itself, one file a line
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
from pathlib import Path

import crsbench
from crsbench.config import BenchmarkConfig, parse_config
from crsbench.datasets.synthetic import WRITERS, resolve_size
from crsbench.runs.pipeline import RunOptions, run_benchmark

SRC = Path(crsbench.__file__).resolve().parent


def _config(root: Path) -> BenchmarkConfig:
    WRITERS["isic2019"](root / "data" / "isic2019", size=resolve_size({"isic2019": 60, "side": 32}),
                        seed=0)  # fmt: skip
    raw = {
        "encoders": [{"name": "pixel"}],
        "datasets": {"isic2019": {"root": str(root / "data" / "isic2019")}},
        "seeds": [0],
        "fractions": [0.5, 1.0],
        "perturbations": {"names": ["jpeg"], "severities": [1], "include_extra": False},
        "layers": [1.0],
        "recalibrators": ["temperature"],
        "output_dir": str(root / "out"),
        "device": "cpu",
    }
    return parse_config(raw, base_dir=root)


def _holds_config(frame) -> bool:
    """Whether a call received the config as an argument (the config's own methods, whose
    ``self`` it is, are part of the config, not of the walk)."""
    code = frame.f_code
    names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    return any(isinstance(frame.f_locals.get(n), BenchmarkConfig) for n in names if n != "self")


def walk(cfg: BenchmarkConfig) -> list[str]:
    """The files (relative to the package) of every call that received the config, in order."""
    seen: list[str] = []

    def profile(frame, event, arg):
        if event != "call":
            return
        path = Path(frame.f_code.co_filename)
        if SRC not in path.parents or not _holds_config(frame):
            return
        rel = str(path.relative_to(SRC))
        if not seen or seen[-1] != rel:
            seen.append(rel)

    sys.setprofile(profile)
    try:
        run_benchmark(cfg, RunOptions(progress=False))
    finally:
        sys.setprofile(None)
    return seen


def summary(files: list[str]) -> dict[str, object]:
    """Files, folders, returns to a file already left, and the file entered most often."""
    entered = collections.Counter(files)
    returns = sum(n - 1 for n in entered.values())
    folders = {str(Path(f).parent) for f in files}
    top, times = entered.most_common(1)[0]
    return {"files": len(entered), "folders": len(folders), "returns": returns,
            "most_entered": f"{top} ({times} times)"}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print the walk, one file a line")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        files = walk(_config(Path(tmp)))
    if args.list:
        print("\n".join(files))
    s = summary(files)
    print(" ".join(f"{k}={v}" for k, v in s.items()))


if __name__ == "__main__":
    main()
