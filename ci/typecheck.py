"""mypy over src/ against a baseline that may only shrink.

``python ci/typecheck.py`` runs mypy on ``src/crsbench`` and compares each file's error count
with ``ci/mypy_baseline.json``: a file with more errors than its baseline (or a new file with
any) fails, naming the file and its new errors; a file with fewer is reported so the baseline
can be lowered with ``--update`` (which never raises a count and never admits a new file).
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BASELINE = REPO / "ci" / "mypy_baseline.json"
ERROR = re.compile(r"^(?P<file>[^:]+):\d+: error: ")

Errors = Mapping[str, list[str]]


def mypy_errors() -> dict[str, list[str]]:
    """Each file's mypy error lines (mypy's config in pyproject.toml)."""
    done = subprocess.run([sys.executable, "-m", "mypy", "src/crsbench", "--no-error-summary"],
                          cwd=REPO, capture_output=True, text=True)  # fmt: skip
    if done.returncode not in (0, 1):
        sys.exit(f"mypy failed to run:\n{done.stdout}\n{done.stderr}")
    return parse_errors(done.stdout)


def parse_errors(text: str) -> dict[str, list[str]]:
    """Group mypy's ``file:line: error: ...`` lines by file (notes and summaries dropped)."""
    errors: dict[str, list[str]] = collections.defaultdict(list)
    for line in text.splitlines():
        m = ERROR.match(line)
        if m:
            errors[m["file"]].append(line)
    return dict(errors)


@dataclass(frozen=True)
class Comparison:
    """Files over their baseline (with their error lines) and files under it (count, baseline)."""

    worse: dict[str, list[str]]
    better: dict[str, tuple[int, int]]


def compare(baseline: Mapping[str, int], errors: Errors) -> Comparison:
    """Each file's error count against its baseline count (0 for a file not in the baseline)."""
    worse = {f: list(e) for f, e in errors.items() if len(e) > baseline.get(f, 0)}
    better = {f: (len(errors.get(f, ())), n) for f, n in baseline.items()
              if len(errors.get(f, ())) < n}  # fmt: skip
    return Comparison(worse=worse, better=better)


def lowered(baseline: Mapping[str, int] | None, errors: Errors) -> dict[str, int]:
    """The baseline with each count lowered to today's where today's is smaller, never raised,
    and no file added; files at zero are dropped. With no baseline file at all (``None``),
    today's counts start one."""
    if baseline is None:
        return {f: len(e) for f, e in sorted(errors.items()) if e}
    counts = {f: min(n, len(errors.get(f, ()))) for f, n in baseline.items()}
    return {f: n for f, n in sorted(counts.items()) if n}


def report(result: Comparison, errors: Errors, baseline: Mapping[str, int]) -> str:
    """What the command prints: the totals, the files under and the files over the baseline."""
    total = sum(len(e) for e in errors.values())
    lines = [f"mypy: {total} errors in {len(errors)} files (baseline {sum(baseline.values())})"]
    for f, (n, was) in sorted(result.better.items()):
        lines.append(f"  fewer than the baseline: {f} {n} < {was} "
                     "(python ci/typecheck.py --update lowers it)")  # fmt: skip
    for f, found in sorted(result.worse.items()):
        lines.append(f"  more than the baseline ({baseline.get(f, 0)}): {f}")
        lines.extend(f"    {line}" for line in found)
    return "\n".join(lines)


def main(
    argv: list[str] | None = None,
    *,
    run_mypy: Callable[[], dict[str, list[str]]] = mypy_errors,
    baseline_path: Path = BASELINE,
) -> int:
    """Compare (and with ``--update`` lower) the baseline; 1 when a file is over its baseline."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--update", action="store_true", help="lower the baseline's counts")
    args = parser.parse_args(argv)
    found = json.loads(baseline_path.read_text()) if baseline_path.exists() else None
    errors = run_mypy()
    baseline: dict[str, int] = found if found is not None else {}
    if args.update:
        baseline_path.write_text(json.dumps(lowered(found, errors), indent=1) + "\n")
        if found is None:  # the first baseline: today's counts, nothing over them
            baseline = lowered(None, errors)
    result = compare(baseline, errors)
    print(report(result, errors, baseline))
    return 1 if result.worse else 0


if __name__ == "__main__":
    sys.exit(main())
